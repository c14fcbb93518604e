import { describe, expect, it } from "vitest";
import { formatHandshake, HandshakeError, parseHandshake } from "../src/index.ts";

describe("handshake line", () => {
  it("formats exactly six fields, the sixth empty without TLS", () => {
    expect(
      formatHandshake({ appVersion: 5, network: "unix", address: "/tmp/plugin123", serverCert: "" }),
    ).toBe("1|5|unix|/tmp/plugin123|grpc|");
  });

  it("adds a seventh field only when multiplexing was negotiated", () => {
    const line = formatHandshake({
      appVersion: 1,
      network: "unix",
      address: "/s",
      serverCert: "",
      multiplex: false,
    });
    expect(line).toBe("1|1|unix|/s|grpc||false");
    expect(parseHandshake(line).multiplex).toBe(false);
  });

  it("round-trips through the parser", () => {
    const cert = "A".repeat(120);
    const h = parseHandshake(
      formatHandshake({ appVersion: 3, network: "tcp", address: "127.0.0.1:1234", serverCert: cert }),
    );
    expect(h).toEqual({
      coreVersion: 1,
      appVersion: 3,
      network: "tcp",
      address: "127.0.0.1:1234",
      protocol: "grpc",
      serverCert: cert,
    });
  });

  it("accepts the official Python example's five-field line and a trailing CR", () => {
    expect(parseHandshake("1|1|tcp|127.0.0.1:1234|grpc").serverCert).toBe("");
    expect(parseHandshake("1|1|unix|/s|grpc|\r").address).toBe("/s");
  });

  it("ignores a certificate field of 50 characters or fewer, as go-plugin does", () => {
    expect(parseHandshake(`1|1|unix|/s|grpc|${"A".repeat(50)}`).serverCert).toBe("");
  });

  it.each([
    ["", "empty first line"],
    ["hello world", "at least 4"],
    ["2|1|unix|/s|grpc|", "core protocol version"],
    ["1|x|unix|/s|grpc|", "not a number"],
    ["1|1|udp|/s|grpc|", "network"],
    ["1|1|unix||grpc|", "empty address"],
    ["1|1|unix|/s", 'protocol must be "grpc", got "netrpc"'],
    ["1|1|unix|/s|netrpc|", "protocol"],
    [`1|1|unix|/s|grpc|${"!".repeat(60)}`, "base64"],
    ["1|1|unix|/s|grpc||maybe", "multiplex"],
    ["1|1|unix|/s|grpc||true|extra", "more than 7"],
  ])("rejects %j", (line, reason) => {
    let err: unknown;
    try {
      parseHandshake(line);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(HandshakeError);
    expect((err as HandshakeError).message).toContain(reason);
    expect((err as HandshakeError).line).toBe(line);
  });

  it("quotes what the plugin printed, truncated", () => {
    const line = `Loading configuration... ${"x".repeat(500)}`;
    expect(() => parseHandshake(line)).toThrow(/printed "Loading configuration\.\.\. x+…"/);
  });

  it("refuses to format a field containing the separator", () => {
    expect(() =>
      formatHandshake({ appVersion: 1, network: "unix", address: "/a|b", serverCert: "" }),
    ).toThrow();
  });
});
