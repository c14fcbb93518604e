// go-plugin AutoMTLS: each side makes a one-time self-signed certificate (cert.ts), the
// host passes its PEM in PLUGIN_CLIENT_CERT, the plugin returns its DER (base64,
// unpadded) in handshake field 6, and every connection in either direction pins those two
// certificates. Kept in its own module so plugins load it only when mTLS is requested.
import { type ChannelCredentials, credentials, ServerCredentials } from "@grpc/grpc-js";
import type { Certificate } from "./cert.ts";

export {
  type Certificate,
  type Curve,
  certToHandshakeField,
  derToPem,
  generateCertificate,
  handshakeFieldToPem,
} from "./cert.ts";

/** Server side of a pinned mTLS connection: requires the peer's exact certificate. */
export function serverTlsCredentials(own: Certificate, peerCertPem: string): ServerCredentials {
  return ServerCredentials.createSsl(
    Buffer.from(peerCertPem),
    [{ cert_chain: Buffer.from(own.certPem), private_key: Buffer.from(own.keyPem) }],
    true,
  );
}

/** Client side of a pinned mTLS connection. Use with TLS_CHANNEL_OPTIONS. */
export function channelTlsCredentials(own: Certificate, peerCertPem: string): ChannelCredentials {
  return credentials.createSsl(Buffer.from(peerCertPem), Buffer.from(own.keyPem), Buffer.from(own.certPem));
}

/** The target is a socket path, not a host name, so name the peer explicitly. */
export const TLS_CHANNEL_OPTIONS = {
  "grpc.ssl_target_name_override": "localhost",
  "grpc.default_authority": "localhost",
} as const;
