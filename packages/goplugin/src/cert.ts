// go-plugin AutoMTLS certificates: the one-time self-signed certificate each side makes,
// and its PEM and handshake forms. Node built-ins only (the gRPC credentials are in
// mtls.ts), so the prelauncher can make the host's certificate before the CLI loads.
import { createHash, generateKeyPairSync, randomBytes, sign, X509Certificate } from "node:crypto";
import {
  bitString,
  boolean,
  contextTag,
  octetString,
  oid,
  sequence,
  set,
  smallInteger,
  time,
  unsignedInteger,
  utf8String,
} from "./der.ts";

export type Curve = "P-256" | "P-384" | "P-521";

export interface Certificate {
  certPem: string;
  keyPem: string;
  certDer: Buffer;
}

const CURVES: Record<Curve, { nodeName: string; hash: string; sigOid: string }> = {
  "P-256": { nodeName: "prime256v1", hash: "sha256", sigOid: "1.2.840.10045.4.3.2" },
  "P-384": { nodeName: "secp384r1", hash: "sha384", sigOid: "1.2.840.10045.4.3.3" },
  "P-521": { nodeName: "secp521r1", hash: "sha512", sigOid: "1.2.840.10045.4.3.4" },
};

/** go-plugin's certificate lifetime: 262980 hours (about 30 years). */
const LIFETIME_MS = 262_980 * 3600_000;

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical
    ? sequence(oid(id), boolean(true), octetString(value))
    : sequence(oid(id), octetString(value));
}

/**
 * A certificate shaped like go-plugin's (CN and SAN "localhost", O "HashiCorp", CA,
 * client and server auth), so it serves as this side's client and server identity.
 * P-256 by default: Go accepts it and, unlike P-521, so does BoringSSL (grpcio).
 */
export function generateCertificate(curve: Curve = "P-256", now: Date = new Date()): Certificate {
  const spec = CURVES[curve];
  const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: spec.nodeName });
  const spki = publicKey.export({ type: "spki", format: "der" });
  const serial = randomBytes(16);
  serial[0] = serial[0]! & 0x7f; // positive
  if (serial[0] === 0) serial[0] = 1; // keep all 16 bytes significant
  const name = sequence(
    set(sequence(oid("2.5.4.10"), utf8String("HashiCorp"))),
    set(sequence(oid("2.5.4.3"), utf8String("localhost"))),
  );
  const sigAlg = sequence(oid(spec.sigOid));
  // digitalSignature(0) keyEncipherment(2) keyAgreement(4) keyCertSign(5): 1010 1100, 2 unused bits.
  const keyUsage = bitString(Buffer.from([0xac]), 2);
  const extKeyUsage = sequence(oid("1.3.6.1.5.5.7.3.2"), oid("1.3.6.1.5.5.7.3.1"));
  const basicConstraints = sequence(boolean(true));
  const san = sequence(contextTag(2, Buffer.from("localhost", "ascii"), false));
  const ski = octetString(createHash("sha1").update(spki).digest());
  const tbs = sequence(
    contextTag(0, smallInteger(2), true), // v3
    unsignedInteger(serial),
    sigAlg,
    name,
    sequence(time(new Date(now.getTime() - 30_000)), time(new Date(now.getTime() + LIFETIME_MS))),
    name,
    spki,
    contextTag(
      3,
      sequence(
        extension("2.5.29.15", true, keyUsage),
        extension("2.5.29.37", false, extKeyUsage),
        extension("2.5.29.19", true, basicConstraints),
        extension("2.5.29.14", false, ski),
        extension("2.5.29.17", false, san),
      ),
      true,
    ),
  );
  const signature = sign(spec.hash, tbs, privateKey);
  const certDer = sequence(tbs, sigAlg, bitString(signature));
  return {
    certDer,
    certPem: derToPem(certDer, "CERTIFICATE"),
    keyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  };
}

export function derToPem(der: Buffer, label = "CERTIFICATE"): string {
  const b64 = der.toString("base64").replace(/(.{64})/g, "$1\n");
  return `-----BEGIN ${label}-----\n${b64}${b64.endsWith("\n") ? "" : "\n"}-----END ${label}-----\n`;
}

/** Handshake field 6: standard base64 of the DER, without padding or newlines. */
export function certToHandshakeField(der: Buffer): string {
  return der.toString("base64").replace(/=+$/, "");
}

/** Inverse of certToHandshakeField; throws if the field is not a certificate. */
export function handshakeFieldToPem(field: string): string {
  const der = Buffer.from(field, "base64");
  const pem = derToPem(der);
  new X509Certificate(pem); // validates
  return pem;
}
