// The secret mask: every value in every encoding it knows, at every base64 alignment,
// overlapping values masked as one, short values handled as documented, nothing else
// touched, and one pass over a 10 MB output.
import { describe, expect, it } from "vitest";
import { MIN_ENCODED_LENGTH, MIN_LITERAL_LENGTH, SecretMask, secretForms } from "../src/secret-mask.ts";

const SECRET = "Tk9/q Üz+rB?w&W=3%zYv";
const PLAIN = "Zq7vK2pW9xR4mT8n";

/**
 * Whether any 6-byte piece of `secret` can be read back from `text` by decoding what is
 * there (literal, reversed, percent/form, any base64 or hex run at any offset): an oracle
 * that does not share the mask's idea of which encodings exist.
 */
function recoverable(text: string, secret: string): string | undefined {
  const bytes = Buffer.from(secret, "utf8");
  const windows: Buffer[] = [];
  for (let i = 0; i + 6 <= bytes.length; i++) windows.push(bytes.subarray(i, i + 6));
  const holds = (b: Buffer) => windows.some((w) => b.includes(w));
  if (holds(Buffer.from(text, "utf8"))) return "literal";
  if (holds(Buffer.from([...text].reverse().join(""), "utf8"))) return "reversed";
  const decoded = text
    .replace(/\+/g, " ")
    .replace(/%([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16)));
  if (holds(Buffer.from(decoded, "latin1"))) return "percent";
  const unescaped = text.replace(/\\u([0-9a-fA-F]{4})/g, (_, h: string) =>
    String.fromCharCode(Number.parseInt(h, 16)),
  );
  if (holds(Buffer.from(unescaped, "utf8"))) return "json escapes";
  for (const run of text.match(/[A-Za-z0-9+/_-]{8,}/g) ?? []) {
    for (let off = 0; off < 4; off++) {
      const b = Buffer.from(run.slice(off).replace(/-/g, "+").replace(/_/g, "/"), "base64");
      if (holds(b)) return `base64 ${run}`;
    }
  }
  for (const run of text.match(/[0-9a-fA-F]{12,}/g) ?? []) {
    for (let off = 0; off < 2; off++) {
      const part = run.slice(off);
      if (holds(Buffer.from(part.slice(0, part.length - (part.length % 2)), "hex"))) return `hex ${run}`;
    }
  }
  return undefined;
}

/** The value in every encoding the mask promises, each inside longer text of its kind. */
function encodings(s: string): string[] {
  const bytes = Buffer.from(s, "utf8");
  const out: string[] = [];
  for (let pad = 0; pad < 6; pad++) {
    const whole = Buffer.concat([Buffer.from(`prefix:${"p".repeat(pad)}`), bytes, Buffer.from(":suffix!")]);
    out.push(whole.toString("base64"), whole.toString("base64url"));
  }
  out.push(bytes.toString("base64"), bytes.toString("base64url"));
  out.push(`0x${bytes.toString("hex")}ff`, `DEAD${bytes.toString("hex").toUpperCase()}BEEF`);
  const uri = encodeURIComponent(s);
  out.push(`?q=${uri}&x=1`, `?q=${uri.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())}`);
  out.push(`a=${new URLSearchParams({ v: s }).toString().slice(2)}`);
  out.push(`rev:${[...s].reverse().join("")}:`);
  out.push(
    JSON.stringify({ k: s }),
    JSON.stringify({ k: s }).replace(
      /[\u007f-\uffff]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
    ),
  );
  out.push(`plain ${s} text`);
  return out;
}

describe("SecretMask", () => {
  const mask = new SecretMask([SECRET, PLAIN]);

  it("masks each encoding of each value, at every base64 alignment", () => {
    for (const s of [SECRET, PLAIN]) {
      for (const e of encodings(s)) {
        expect(recoverable(e, s), `unmasked input ${e}`).toBeDefined();
        const masked = mask.mask(e);
        expect(recoverable(masked, s), `${e} -> ${masked}`).toBeUndefined();
        expect(masked).toContain("[redacted]");
      }
    }
  });

  it("keeps the text around a match", () => {
    expect(mask.mask(`before ${PLAIN} after`)).toBe("before [redacted] after");
    expect(mask.mask(`x=${Buffer.from(PLAIN).toString("hex")};`)).toBe("x=[redacted];");
    // Base64: the partial groups on either side go too, nothing further.
    const b64 = Buffer.from(`head:${PLAIN}:tail`).toString("base64");
    const masked = mask.mask(`data ${b64} end`);
    expect(masked.startsWith("data ")).toBe(true);
    expect(masked.endsWith(" end")).toBe(true);
    expect(masked.length).toBeLessThan(`data ${b64} end`.length);
    expect(masked.slice(5, 9)).toBe(b64.slice(0, 4)); // the first group holds only "head"
  });

  it("returns the very same string when there is nothing to mask, and finds nothing in unrelated data", () => {
    const text = "an ordinary output line with no secret in it";
    expect(mask.mask(text)).toBe(text);
    expect(mask.contains(text)).toBe(false);
    // 1 MB of pseudo-random base64 and hex: no chance match of an 8+ character value.
    let x = 12345;
    const rnd = Buffer.alloc(1 << 20);
    for (let i = 0; i < rnd.length; i++) {
      x = (x * 1103515245 + 12345) & 0x7fffffff;
      rnd[i] = x >> 16;
    }
    const noise = `${rnd.toString("base64")}\n${rnd.subarray(0, 1 << 18).toString("hex")}`;
    const short = new SecretMask(["abcdefgh", "ABCDEFGH12"]);
    expect(short.contains(noise)).toBe(false);
    expect(short.mask(noise)).toBe(noise);
  });

  it("masks overlapping and nested values as one range", () => {
    const m = new SecretMask(["abcdefgh12", "fgh12345xyz", "12345xy"]);
    expect(m.mask("<abcdefgh12345xyz>")).toBe("<[redacted]>");
    expect(m.mask("<fgh12345xyz> <abcdefgh12> <12345xy>")).toBe("<[redacted]> <[redacted]> <[redacted]>");
    // A value inside another: the longer one is masked whole.
    const n = new SecretMask(["inner-secret", "outer-inner-secret-value"]);
    expect(n.mask("[outer-inner-secret-value]")).toBe("[[redacted]]");
    expect(n.mask("(inner-secret)")).toBe("([redacted])");
    // Back-to-back copies.
    expect(n.mask("inner-secretinner-secret")).toBe("[redacted]");
  });

  it("short values: under MIN_LITERAL_LENGTH none, under MIN_ENCODED_LENGTH literally only", () => {
    expect(MIN_LITERAL_LENGTH).toBe(6);
    expect(MIN_ENCODED_LENGTH).toBe(8);
    const m = new SecretMask(["abcde", "abcdef7"]);
    expect(m.mask("abcde")).toBe("abcde");
    expect(m.mask("x abcdef7 x")).toBe("x [redacted] x");
    const hex = Buffer.from("abcdef7").toString("hex");
    expect(m.mask(hex)).toBe(hex);
    expect(secretForms("abcdef7")).toEqual([{ text: "abcdef7", base64: false }]);
    expect(secretForms("abcdef78").length).toBeGreaterThan(4);
    expect(new SecretMask(["abc", ""]).empty).toBe(true);
    // A caller may lower the literal floor (configuration diagnostics use 4).
    expect(new SecretMask(["abcd"], { minLiteral: 4 }).mask("abcd")).toBe("[redacted]");
  });

  it("masks every string of a JSON value, keys included, and shares what it did not change", () => {
    const clean = { a: ["x", { b: 1 }] };
    const value = {
      text: `key ${PLAIN}`,
      nested: [{ deep: Buffer.from(SECRET).toString("base64") }, 3, null, true],
      [PLAIN]: "as a key",
      clean,
    };
    const out = mask.maskJson(value);
    expect(JSON.stringify(out)).not.toContain(PLAIN);
    expect(out.text).toBe("key [redacted]");
    expect(out.nested[1]).toBe(3);
    expect(out.clean).toBe(clean);
    expect(out).toHaveProperty("[redacted]", "as a key");
    expect(mask.maskJson(clean)).toBe(clean);
  });

  it("masks the part of a growing text no later piece can change, and keeps the rest as it was", () => {
    const mask = new SecretMask([PLAIN]);
    const head = "y".repeat(200);
    // A value cut off at the end is held back with what follows the safe part.
    const cutOff = mask.maskPrefix(`${head}${PLAIN}${"z".repeat(100)}${PLAIN.slice(0, 9)}`);
    expect(cutOff.masked).toBe(`${head}[redacted]${"z".repeat(100 - mask.longest - 3 + 9)}`);
    expect(cutOff.rest.endsWith(PLAIN.slice(0, 9))).toBe(true);
    // A match reaching into the tail is held back whole, not cut in two.
    const tail = `${head}${PLAIN}${"z".repeat(mask.longest - 4)}`;
    const held = mask.maskPrefix(tail);
    expect(held.masked).toBe(head);
    expect(held.rest).toBe(tail.slice(200));
    // Too short to pass anything on; nothing to mask passes everything.
    expect(mask.maskPrefix("short")).toEqual({ masked: "", rest: "short" });
    expect(new SecretMask([]).maskPrefix("short")).toEqual({ masked: "short", rest: "" });
  });

  it("uses the marker it is given", () => {
    expect(new SecretMask([PLAIN], { marker: "(sensitive)" }).mask(PLAIN)).toBe("(sensitive)");
  });

  it("masks a 10 MB output in one pass: every copy, in every form, and nothing else", () => {
    const many = new SecretMask([
      SECRET,
      PLAIN,
      ...Array.from({ length: 40 }, (_, i) => `other-secret-value-${i}-${"x".repeat(i)}`),
    ]);
    expect(many.forms).toBeGreaterThan(200);
    const filler = "lorem ipsum dolor sit amet, 0123456789 ABCDEF abcdef +/=%\n".repeat(1000);
    const forms = [...encodings(SECRET), ...encodings(PLAIN)];
    // Each form between two \u0001 (which no form contains), after a stretch of filler.
    const pieces: string[] = [];
    let i = 0;
    let size = 0;
    while (size < 10 * 1024 * 1024) {
      const e = forms[i++ % forms.length]!;
      pieces.push(filler, `\u0001${e}\u0001`);
      size += filler.length + e.length + 2;
    }
    pieces.push(filler);
    const text = pieces.join("");
    const masked = many.mask(text);
    const parts = masked.split("\u0001");
    expect(parts.length).toBe(2 * i + 1);
    parts.forEach((p, k) => {
      // The filler is untouched; each form is masked.
      if (k % 2 === 0) expect(p).toBe(filler);
      else if (!p.includes("[redacted]") || recoverable(p, SECRET) || recoverable(p, PLAIN))
        expect.fail(`not masked: ${p}`);
    });
    expect(many.contains(text)).toBe(true);
    expect(many.contains(filler.repeat(50))).toBe(false);
  });
});
