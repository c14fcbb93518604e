// The shapes every plugin launch shares, whatever runs the plugin: its log records, the
// kernel callbacks offered to it, and what discovery found it serves.
import type { DescService } from "@bufbuild/protobuf";
import type { UntypedServiceImplementation } from "@grpc/grpc-js";
import type { HandlerContext, LogLine, ServiceImpl } from "@pluggableharness/goplugin";
import type { ProducerRef } from "@pluggableharness/protocol/common";

/** A plugin log line, attributed to the plugin that wrote it. */
export interface PluginLogRecord extends LogLine {
  plugin: string;
  /** Which launch of the plugin (1 for the first, 2 after one relaunch, ...). */
  instance: number;
  /** stderr/stdout: the process pipes; stdio: go-plugin's GRPCStdio stream; runtime: this launcher. */
  source: "stderr" | "stdout" | "stdio" | "runtime";
}

/** Who is calling the kernel: fixed by the connection the call arrived on. */
export interface CallbackPeer {
  readonly plugin: string;
  readonly instance: number;
  readonly pid: number;
  /** Describe answers per category, filled in once discovery has run. */
  readonly producers: ReadonlyMap<string, ProducerRef>;
}

export interface CallbackContext extends HandlerContext {
  peer: CallbackPeer;
}

/** The service the kernel offers plugins over the broker, bound per connection. */
export interface CallbackRegistration<S extends DescService = DescService> {
  service: S;
  implementation: (peer: CallbackPeer) => ServiceImpl<S, CallbackContext>;
  /**
   * Further services served on the same callback socket, as raw grpc-js handlers (e.g.
   * the kernel's FrontendService.Attach, a bidirectional stream `implement` does not cover).
   */
  extraServices?: (peer: CallbackPeer) => ReadonlyArray<ExtraService>;
}

/** A service offered next to the kernel callbacks, with grpc-js handlers keyed by method localName. */
export interface ExtraService {
  service: DescService;
  handlers: UntypedServiceImplementation;
}

/** A category service and its name; it is served if its Describe answers. */
export interface CategoryProbe {
  category: string;
  service: DescService;
}

export interface PluginDescription {
  /** Categories whose Describe answered, in probe order. */
  categories: string[];
  producers: Record<string, ProducerRef>;
}
