// The handful of ASN.1 DER encoders an X.509 certificate needs. Node can parse and
// verify certificates (crypto.X509Certificate) but cannot build one, and AutoMTLS only
// ever needs one fixed certificate shape, so a small encoder beats a dependency.

function lengthBytes(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** A TLV with an arbitrary tag byte. */
export function tlv(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), lengthBytes(content.length), content]);
}

export function sequence(...items: Buffer[]): Buffer {
  return tlv(0x30, Buffer.concat(items));
}

export function set(...items: Buffer[]): Buffer {
  return tlv(0x31, Buffer.concat(items));
}

/** A non-negative INTEGER from big-endian magnitude bytes, minimally encoded. */
export function unsignedInteger(magnitude: Buffer): Buffer {
  let i = 0;
  while (i < magnitude.length - 1 && magnitude[i] === 0) i++;
  let body = magnitude.subarray(i);
  if (body.length === 0) body = Buffer.from([0]);
  if (body[0]! & 0x80) body = Buffer.concat([Buffer.from([0]), body]);
  return tlv(0x02, body);
}

export function smallInteger(n: number): Buffer {
  if (!Number.isInteger(n) || n < 0 || n > 0x7fffffff) throw new RangeError(`integer ${n} out of range`);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return unsignedInteger(Buffer.from(bytes));
}

export function boolean(value: boolean): Buffer {
  return tlv(0x01, Buffer.from([value ? 0xff : 0x00]));
}

export function octetString(content: Buffer): Buffer {
  return tlv(0x04, content);
}

/** BIT STRING with `unusedBits` trailing padding bits in the last byte. */
export function bitString(content: Buffer, unusedBits = 0): Buffer {
  return tlv(0x03, Buffer.concat([Buffer.from([unusedBits]), content]));
}

export function oid(dotted: string): Buffer {
  const arcs = dotted.split(".").map(Number);
  if (arcs.length < 2 || arcs.some((a) => !Number.isInteger(a) || a < 0))
    throw new Error(`bad OID ${dotted}`);
  const out: number[] = [arcs[0]! * 40 + arcs[1]!];
  for (const arc of arcs.slice(2)) {
    const chunk: number[] = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift((v & 0x7f) | 0x80);
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

export function utf8String(s: string): Buffer {
  return tlv(0x0c, Buffer.from(s, "utf8"));
}

/** Context-specific tag: constructed EXPLICIT wrapper or primitive IMPLICIT value. */
export function contextTag(n: number, content: Buffer, constructed: boolean): Buffer {
  return tlv((constructed ? 0xa0 : 0x80) | n, content);
}

function two(n: number): string {
  return String(n).padStart(2, "0");
}

/** X.509 Time: UTCTime through 2049, GeneralizedTime from 2050 (RFC 5280 4.1.2.5). */
export function time(d: Date): Buffer {
  const y = d.getUTCFullYear();
  const rest =
    two(d.getUTCMonth() + 1) +
    two(d.getUTCDate()) +
    two(d.getUTCHours()) +
    two(d.getUTCMinutes()) +
    two(d.getUTCSeconds()) +
    "Z";
  if (y >= 1950 && y < 2050) return tlv(0x17, Buffer.from(two(y % 100) + rest, "ascii"));
  return tlv(0x18, Buffer.from(String(y).padStart(4, "0") + rest, "ascii"));
}
