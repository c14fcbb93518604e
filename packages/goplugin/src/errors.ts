// Typed errors for the go-plugin wire layer. Each carries a stable `code` so callers
// can classify without matching on messages.
import { status as Status } from "@grpc/grpc-js";

/** Shortens text quoted inside an error message. */
export function quote(text: string, max = 200): string {
  const shown = text.length > max ? `${text.slice(0, max)}…` : text;
  return JSON.stringify(shown);
}

/** The first stdout line of a plugin is not a valid go-plugin handshake. */
export class HandshakeError extends Error {
  readonly code = "bad_handshake";
  /** What the plugin printed (possibly truncated). */
  readonly line: string;
  constructor(reason: string, line: string) {
    super(`invalid plugin handshake (${reason}): the plugin printed ${quote(line)}`);
    this.name = "HandshakeError";
    this.line = line;
  }
}

/** The plugin and host share no application protocol version. */
export class VersionMismatchError extends Error {
  readonly code = "version_mismatch";
  readonly offered: readonly number[];
  readonly chosen: number;
  constructor(offered: readonly number[], chosen: number) {
    super(
      `plugin speaks protocol version ${chosen}, but this host supports only ${offered.join(", ")}; ` +
        "upgrade whichever side is older",
    );
    this.name = "VersionMismatchError";
    this.offered = offered;
    this.chosen = chosen;
  }
}

/** A unix socket path longer than the platform's sun_path limit. */
export class SocketPathTooLongError extends Error {
  readonly code = "socket_path_too_long";
  readonly path: string;
  readonly limit: number;
  constructor(path: string, limit: number) {
    super(
      `unix socket path is ${Buffer.byteLength(path)} bytes, over this platform's limit of ${limit}: ` +
        `${quote(path, 300)}; choose a shorter socket directory`,
    );
    this.name = "SocketPathTooLongError";
    this.path = path;
    this.limit = limit;
  }
}

/** A gRPC call that ended with a non-OK status from the peer. */
export class RpcError extends Error {
  /** The gRPC status code (see @grpc/grpc-js `status`). */
  readonly code: number;
  /** The gRPC status name, e.g. "UNIMPLEMENTED". */
  readonly status: string;
  /** The fully qualified method, e.g. "/plugin.GRPCController/Shutdown". */
  readonly method: string;
  readonly details: string;
  constructor(code: number, details: string, method: string) {
    const name = Status[code] ?? `CODE_${code}`;
    super(`${method}: ${name}${details ? `: ${details}` : ""}`);
    this.name = "RpcError";
    this.code = code;
    this.status = name;
    this.method = method;
    this.details = details;
  }
}

/** Anything grpc-js may hand back as a call error. */
export interface GrpcErrorLike {
  code?: number;
  details?: string;
  message?: string;
}

export function isGrpcError(err: unknown): err is GrpcErrorLike & Error {
  return err instanceof Error && typeof (err as GrpcErrorLike).code === "number";
}
