// Bridges protobuf-es descriptors to @grpc/grpc-js: one ServiceDefinition per service,
// with (de)serialisation done by protobuf-es so grpc-js never sees a schema of its own.
import {
  type DescMessage,
  type DescService,
  fromBinary,
  type MessageShape,
  toBinary,
} from "@bufbuild/protobuf";
import type { MethodDefinition, ServiceDefinition } from "@grpc/grpc-js";

function serializer<Desc extends DescMessage>(desc: Desc): (value: MessageShape<Desc>) => Buffer {
  return (value) => {
    const bytes = toBinary(desc, value);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  };
}

function deserializer<Desc extends DescMessage>(desc: Desc): (bytes: Buffer) => MessageShape<Desc> {
  return (bytes) => fromBinary(desc, bytes);
}

/** The fully-qualified gRPC path of a method, e.g. "/plugin.GRPCBroker/StartStream". */
export function methodPath(service: DescService, methodName: string): string {
  return `/${service.typeName}/${methodName}`;
}

const definitions = new WeakMap<DescService, ServiceDefinition>();

/**
 * A grpc-js ServiceDefinition for a protobuf-es service descriptor, keyed by each
 * method's localName (lowerCamelCase), which is also how implementations are looked up.
 */
export function serviceDefinition(service: DescService): ServiceDefinition {
  const cached = definitions.get(service);
  if (cached) return cached;
  const def: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const method of service.methods) {
    const kind = method.methodKind;
    def[method.localName] = {
      path: methodPath(service, method.name),
      originalName: method.name,
      requestStream: kind === "client_streaming" || kind === "bidi_streaming",
      responseStream: kind === "server_streaming" || kind === "bidi_streaming",
      requestSerialize: serializer(method.input) as (value: unknown) => Buffer,
      requestDeserialize: deserializer(method.input),
      responseSerialize: serializer(method.output) as (value: unknown) => Buffer,
      responseDeserialize: deserializer(method.output),
    };
  }
  definitions.set(service, def);
  return def;
}
