import { X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, Server } from "@grpc/grpc-js";
import { serviceDefinition } from "@pluggableharness/protocol/grpc";
import { Health } from "@pluggableharness/protocol/health";
import { afterAll, describe, expect, it } from "vitest";
import { CHANNEL_OPTIONS, createClient, HealthState, RpcError, unixTarget } from "../src/index.ts";
import {
  certToHandshakeField,
  channelTlsCredentials,
  generateCertificate,
  handshakeFieldToPem,
  serverTlsCredentials,
  TLS_CHANNEL_OPTIONS,
} from "../src/mtls.ts";

const dir = mkdtempSync(join(tmpdir(), "ph-mtls-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("AutoMTLS certificates", () => {
  it.each(["P-256", "P-384", "P-521"] as const)("builds a go-plugin shaped %s certificate", (curve) => {
    const now = new Date("2031-05-06T07:08:09Z");
    const cert = generateCertificate(curve, now);
    const x = new X509Certificate(cert.certPem);
    expect(x.subject).toBe("O=HashiCorp\nCN=localhost");
    expect(x.issuer).toBe(x.subject);
    expect(x.subjectAltName).toBe("DNS:localhost");
    expect(x.ca).toBe(true);
    expect(x.keyUsage).toEqual(["1.3.6.1.5.5.7.3.2", "1.3.6.1.5.5.7.3.1"]);
    expect(x.verify(x.publicKey)).toBe(true);
    expect(new Date(x.validFrom).getTime()).toBe(now.getTime() - 30_000);
    // 262980 hours later, past 2050, so encoded as GeneralizedTime.
    expect(new Date(x.validTo).getTime()).toBe(now.getTime() + 262_980 * 3600_000);
    expect(x.serialNumber).toMatch(/^[0-7][0-9A-F]{31}$/);
    expect(x.publicKey.asymmetricKeyDetails?.namedCurve).toBe(
      { "P-256": "prime256v1", "P-384": "secp384r1", "P-521": "secp521r1" }[curve],
    );
  });

  it("passes the certificate through handshake field 6 as unpadded base64", () => {
    const cert = generateCertificate();
    const field = certToHandshakeField(cert.certDer);
    expect(field).not.toMatch(/[=\n]/);
    expect(handshakeFieldToPem(field)).toBe(cert.certPem);
    expect(() => handshakeFieldToPem("bm90IGEgY2VydGlmaWNhdGU")).toThrow();
  });

  it("pins both sides: the right client gets in over a unix socket, a foreign one does not", async () => {
    const host = generateCertificate();
    const plugin = generateCertificate();
    const stranger = generateCertificate();
    const server = new Server();
    server.addService(serviceDefinition(Health), new HealthState().handlers());
    const path = join(dir, "tls.sock");
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(unixTarget(path), serverTlsCredentials(plugin, host.certPem), (e) =>
        e ? reject(e) : resolve(),
      ),
    );
    const dial = (own: typeof host) =>
      new Client(unixTarget(path), channelTlsCredentials(own, plugin.certPem), {
        ...CHANNEL_OPTIONS,
        ...TLS_CHANNEL_OPTIONS,
      });
    const good = dial(host);
    const bad = dial(stranger);
    try {
      const res = await createClient(Health, good).check({ service: "plugin" }, { timeoutMs: 5_000 });
      expect(res.status).toBe(1);
      const err = await createClient(Health, bad)
        .check({ service: "plugin" }, { timeoutMs: 5_000 })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RpcError);
      expect((err as RpcError).status).toBe("UNAVAILABLE");
    } finally {
      good.close();
      bad.close();
      server.forceShutdown();
    }
  });
});
