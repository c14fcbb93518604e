// The frames one endpoint posts to the other. Each is a small array whose first element
// says what it is; message bodies travel as protobuf bytes (the same bytes gRPC would put
// on the wire), their buffers transferred rather than copied when nothing else can see them.
// Call ids are chosen by the calling side; each side keeps the calls it makes and the calls
// it serves apart, so the two directions never collide.

/** A call starts: [CALL, id, path, request bytes, metadata, timeout ms]. */
export const CALL = 0;
/** The answer of a unary call: [UNARY, id, response bytes]. */
export const UNARY = 1;
/** One message of a server-streaming call: [DATA, id, bytes]. */
export const DATA = 2;
/** A server stream ended normally: [END, id]. */
export const END = 3;
/** A call failed with a status: [STATUS, id, code, details]. */
export const STATUS = 4;
/** The caller gave up (cancelled, deadline passed): [CANCEL, id]. */
export const CANCEL = 5;
/** The caller consumed stream messages, so more may be sent: [CREDIT, id, count]. */
export const CREDIT = 6;
/** A one-way control message: [NOTIFY, name, payload]. */
export const NOTIFY = 7;
/** A control request: [REQUEST, id, name, payload]. */
export const REQUEST = 8;
/** The answer to a control request: [REPLY, id, ok, payload or error message]. */
export const REPLY = 9;
/** Liveness probe: [PING, n]; answered by [PONG, n] from the receiving event loop. */
export const PING = 10;
export const PONG = 11;
/** Several frames in one post, in order: [BATCH, frames]. */
export const BATCH = 12;

export type Frame =
  | [typeof CALL, number, string, Uint8Array, Record<string, string> | undefined, number | undefined]
  | [typeof UNARY, number, Uint8Array]
  | [typeof DATA, number, Uint8Array]
  | [typeof END, number]
  | [typeof STATUS, number, number, string]
  | [typeof CANCEL, number]
  | [typeof CREDIT, number, number]
  | [typeof NOTIFY, string, unknown]
  | [typeof REQUEST, number, string, unknown]
  | [typeof REPLY, number, boolean, unknown]
  | [typeof PING, number]
  | [typeof PONG, number]
  | [typeof BATCH, Frame[]];

/** Stream messages a server may send before the caller grants more. */
export const STREAM_WINDOW = 64;

/** gRPC status codes used here (numerically identical to grpc-js `status`). */
export const Code = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  DEADLINE_EXCEEDED: 4,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

/**
 * The buffers to transfer with `bytes`: its own buffer when the view covers all of it
 * (protobuf-es allocates exactly), else none (a slice of a shared pool is copied instead,
 * since transferring would detach bytes the sender still uses).
 */
export function transferOf(bytes: Uint8Array): ArrayBuffer[] {
  const buf = bytes.buffer;
  if (buf instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === buf.byteLength) {
    return [buf];
  }
  return [];
}

/** A buffer for deserializers typed on Buffer; a view, never a copy. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
