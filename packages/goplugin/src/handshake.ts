// The one stdout line a go-plugin plugin prints once it is listening:
//   CORE|APP|NETWORK|ADDRESS|PROTOCOL|SERVER_CERT[|MULTIPLEX]
import { CORE_PROTOCOL_VERSION } from "./constants.ts";
import { HandshakeError } from "./errors.ts";

export type HandshakeNetwork = "unix" | "tcp";

export interface Handshake {
  /** go-plugin's core protocol version; always 1. */
  coreVersion: number;
  /** The negotiated application protocol version. */
  appVersion: number;
  network: HandshakeNetwork;
  address: string;
  /** Only "grpc" is spoken here (go-plugin's legacy "netrpc" is not). */
  protocol: "grpc";
  /** The plugin's AutoMTLS certificate (base64 DER, unpadded), or "" without TLS. */
  serverCert: string;
  /** Set only when the plugin answered a multiplexing request. */
  multiplex?: boolean;
}

/** Formats the handshake line, without the trailing newline. */
export function formatHandshake(
  h: Omit<Handshake, "coreVersion" | "protocol"> & { protocol?: "grpc" },
): string {
  const fields = [
    String(CORE_PROTOCOL_VERSION),
    String(h.appVersion),
    h.network,
    h.address,
    h.protocol ?? "grpc",
    h.serverCert,
  ];
  // A seventh field breaks hosts that split into six, so it appears only on request.
  if (h.multiplex !== undefined) fields.push(String(h.multiplex));
  for (const f of fields) {
    if (f.includes("|") || f.includes("\n"))
      throw new Error(`handshake field ${JSON.stringify(f)} contains | or newline`);
  }
  return fields.join("|");
}

const DECIMAL = /^(0|[1-9][0-9]{0,8})$/;

/**
 * Parses a handshake line strictly: anything that is not exactly the go-plugin format
 * raises a HandshakeError that quotes what was printed.
 */
export function parseHandshake(rawLine: string): Handshake {
  const line = rawLine.endsWith("\r") ? rawLine.slice(0, -1) : rawLine;
  if (line.trim() === "") throw new HandshakeError("empty first line", rawLine);
  const parts = line.split("|");
  if (parts.length < 4) throw new HandshakeError("expected at least 4 |-separated fields", rawLine);
  if (parts.length > 7) throw new HandshakeError("more than 7 fields", rawLine);
  const [core, app, network, address, protocol = "netrpc", serverCert = "", multiplex] = parts as [
    string,
    string,
    string,
    string,
    string?,
    string?,
    string?,
  ];
  if (core !== String(CORE_PROTOCOL_VERSION)) {
    throw new HandshakeError(`core protocol version must be ${CORE_PROTOCOL_VERSION}`, rawLine);
  }
  if (!DECIMAL.test(app)) throw new HandshakeError("application version is not a number", rawLine);
  if (network !== "unix" && network !== "tcp") {
    throw new HandshakeError(`network must be "unix" or "tcp", got ${JSON.stringify(network)}`, rawLine);
  }
  if (address === "") throw new HandshakeError("empty address", rawLine);
  if (protocol !== "grpc") {
    throw new HandshakeError(`protocol must be "grpc", got ${JSON.stringify(protocol)}`, rawLine);
  }
  // go-plugin ignores a certificate field of 50 characters or fewer.
  const cert = serverCert.length > 50 ? serverCert : "";
  if (cert !== "" && !/^[A-Za-z0-9+/]+={0,2}$/.test(cert)) {
    throw new HandshakeError("server certificate is not base64", rawLine);
  }
  const result: Handshake = {
    coreVersion: CORE_PROTOCOL_VERSION,
    appVersion: Number(app),
    network,
    address,
    protocol: "grpc",
    serverCert: cert,
  };
  if (multiplex !== undefined) {
    if (multiplex !== "true" && multiplex !== "false") {
      throw new HandshakeError('multiplex field must be "true" or "false"', rawLine);
    }
    result.multiplex = multiplex === "true";
  }
  return result;
}
