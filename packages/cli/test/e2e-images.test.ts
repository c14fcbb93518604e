// End to end: read_file on an image, through the real `agent` and first-party plugins, a
// scripted model on each vendor's validating fake. A model that takes images gets the
// image inside the tool result in its vendor's wire format (the validators check the
// media type and that the bytes are that image); a model without vision gets a note
// saying what the image was, and never an image block.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { deflateSync } from "node:zlib";
import { type FakeVendor, startFakeVendor, type VendorId } from "@pluggableharness/fake-vendors";
import { encodePng, imageHeader } from "@pluggableharness/image-kit";
import { openSessionReader } from "@pluggableharness/state";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, type Sandbox, sandbox } from "./helpers.ts";

/** A real 3x2 RGB PNG (signature, IHDR, IDAT, IEND with their CRCs). */
function png(): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (b: Buffer) => {
    let c = 0xffffffff;
    for (const x of b) c = crcTable[(c ^ x) & 0xff]! ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc(body));
    return Buffer.concat([len, body, sum]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(3, 0);
  ihdr.writeUInt32BE(2, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  const rows = Buffer.concat([
    Buffer.from([0, 255, 0, 0, 0, 255, 0, 0, 0, 255]),
    Buffer.from([0, 9, 9, 9, 8, 8, 8, 7, 7, 7]),
  ]);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(rows)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

const PNG = png();
const B64 = PNG.toString("base64");

interface Case {
  name: string;
  vendor: VendorId;
  provider: string;
  model: string;
  block: string;
  keyVar: string;
  baseSuffix: string;
}

const CASES: Case[] = [
  {
    name: "anthropic",
    vendor: "anthropic",
    provider: "anthropic",
    model: "claude-sonnet-5",
    block: 'api_key = env("K")\n  base_url = env("FAKE_URL")',
    keyVar: "sk-ant-test",
    baseSuffix: "",
  },
  {
    name: "openai",
    vendor: "openai-responses",
    provider: "openai",
    model: "gpt-5.6-sol",
    block: 'api_key = env("K")\n  base_url = env("FAKE_URL")',
    keyVar: "sk-test",
    baseSuffix: "/v1",
  },
  {
    name: "google",
    vendor: "gemini",
    provider: "google",
    model: "gemini-3.8-flash",
    block: 'api_key = env("K")\n  base_url = env("FAKE_URL")',
    keyVar: "AIza-test",
    baseSuffix: "",
  },
  {
    name: "xai",
    vendor: "xai",
    provider: "xai",
    model: "grok-4.3",
    block: 'api_key = env("K")\n  base_url = env("FAKE_URL")',
    keyVar: "xai-test",
    baseSuffix: "/v1",
  },
  {
    name: "openai-compatible",
    vendor: "ollama",
    provider: "openai-compatible",
    model: "llava",
    block: 'base_url = env("FAKE_URL")\n  model = "llava"\n  vision = true',
    keyVar: "",
    baseSuffix: "/v1",
  },
];

function hcl(c: Case, extra = ""): string {
  return `
required_providers {
  ${c.provider} = { source = "pluggableharness/${c.provider}", version = ">= 0.1.0" }
  filesystem = { source = "pluggableharness/filesystem", version = ">= 0.1.0" }
}
provider "${c.provider}" {
  ${c.block}${extra}
}
provider "filesystem" {
  roots = [env("FIXTURE_ROOT")]
}
policy "allow_reads" {
  match  = { kind = "data_source" }
  action = "allow"
}
agent_profile "default" {
  model {
    primary {
      provider = "${c.provider}"
      id       = "${c.model}"
    }
  }
  tools     = ["filesystem.*"]
  max_turns = 4
}
settings {
  retry {
    base_delay_ms  = 0
    backoff_factor = 1
    max_retries    = 0
  }
}
`;
}

let sb: Sandbox;
const fakes: FakeVendor[] = [];

beforeAll(() => {
  sb = sandbox();
});

afterAll(async () => {
  for (const f of fakes) await f.close();
  sb?.cleanup();
});

async function runWith(c: Case, extra = "", image: Buffer = PNG, tag = "") {
  const repo = sb.repo(`repo-${c.name}${extra ? "-novision" : ""}${tag}`);
  writeFileSync(join(repo, "agent.hcl"), hcl(c, extra));
  writeFileSync(join(repo, "shot.png"), image);
  const fake = await startFakeVendor({ vendor: c.vendor, validate: true, models: [c.model] });
  fakes.push(fake);
  fake.push(
    { kind: "tool_calls", calls: [{ name: "filesystem__read_file", args: { path: "shot.png" } }] },
    { kind: "text", text: "A tiny picture." },
  );
  const r = await agent(["run", "-p", "what is in shot.png?", "--output-format", "json"], {
    cwd: repo,
    env: { ...sb.env, K: c.keyVar, FAKE_URL: `${fake.url}${c.baseSuffix}`, FIXTURE_ROOT: repo },
    timeoutMs: 60_000,
  });
  return { r, fake };
}

/** Every inline image in the request body, wherever the vendor puts it, as [media type, base64]. */
function imagesIn(json: unknown): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const visit = (v: unknown) => {
    if (Array.isArray(v)) return v.forEach(visit);
    if (!v || typeof v !== "object") return;
    const o = v as Record<string, unknown>;
    if (o["type"] === "base64" && typeof o["data"] === "string")
      out.push([String(o["media_type"]), o["data"]]);
    if (o["inlineData"] && typeof o["inlineData"] === "object") {
      const d = o["inlineData"] as Record<string, string>;
      out.push([d["mimeType"]!, d["data"]!]);
    }
    const url =
      typeof o["image_url"] === "string"
        ? o["image_url"]
        : o["image_url"] && typeof o["image_url"] === "object"
          ? (o["image_url"] as Record<string, string>)["url"]
          : undefined;
    if (typeof url === "string") {
      const m = /^data:([^;]+);base64,(.*)$/.exec(url);
      if (m) out.push([m[1]!, m[2]!]);
    }
    for (const x of Object.values(o)) visit(x);
  };
  visit(json);
  return out;
}

describe("read_file images reach vision models in every vendor's wire format", () => {
  it.each(CASES)("$name", async (c) => {
    const { r, fake } = await runWith(c);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ result: "A tiny picture." });
    expect(fake.requests).toHaveLength(2);
    // The validator accepted both requests (a refusal would have failed the run).
    expect(fake.requests.every((q) => q.rejected === undefined)).toBe(true);
    expect(imagesIn(fake.requests[1]!.json)).toEqual([["image/png", B64]]);
    const sent = JSON.stringify(fake.requests[1]!.json);
    expect(sent).toContain("PNG image shot.png (3x2 pixels, ");
    // The image travels once, as an image: not also as base64 text inside the result.
    expect(sent.split(B64).length - 1).toBe(1);
  });

  it("a model without vision reads a note instead, and is sent no image", async () => {
    const c = CASES.find((x) => x.name === "openai-compatible")!;
    const { r, fake } = await runWith(
      { ...c, block: c.block.replace("vision = true", "vision = false") },
      "\n",
    );
    expect(r.code, r.stderr).toBe(0);
    const body = fake.requests[1]!.json;
    expect(imagesIn(body)).toEqual([]);
    const sent = JSON.stringify(body);
    expect(sent).not.toContain(B64);
    expect(sent).toMatch(/an image \(image\/png, \d+ bytes\) not shown: llava does not take images/);
  });

  it("a large image read_file returns is fitted to the model; the tool result in the session keeps it whole", async () => {
    const c = CASES.find((x) => x.name === "anthropic")!;
    const w = 3000;
    const h = 2000;
    const px = new Uint8Array(w * h * 4);
    for (let i = 0; i < px.length; i += 4) px.set([(i / 4) % 251, ((i / 4 / w) | 0) % 241, 40, 255], i);
    const big = Buffer.from(encodePng({ width: w, height: h, data: px }));
    const { r, fake } = await runWith(c, "", big, "-large");
    expect(r.code, r.stderr).toBe(0);
    expect(fake.requests.every((q) => q.rejected === undefined)).toBe(true);
    const images = imagesIn(fake.requests[1]!.json);
    expect(images).toHaveLength(1);
    const [mediaType, data] = images[0]!;
    expect(mediaType).toBe("image/png");
    const head = imageHeader(Buffer.from(data, "base64"))!;
    expect(Math.max(head.width, head.height)).toBeLessThanOrEqual(1568);
    expect(head.width * head.height).toBeLessThanOrEqual(1_150_000);
    const sent = JSON.stringify(fake.requests[1]!.json);
    expect(sent).toContain("PNG image shot.png (3000x2000 pixels, ");
    expect(sent).toContain(
      `image downscaled from 3000x2000 to ${head.width}x${head.height} pixels to fit claude-sonnet-5`,
    );
    expect(sent).not.toContain(big.toString("base64"));
    // The session file holds the tool result as read_file returned it: the original bytes.
    const reader = openSessionReader(String(JSON.parse(r.stdout).session_id), {
      dir: join(sb.env["XDG_STATE_HOME"]!, "agent", "sessions"),
    });
    try {
      const whole = Buffer.from(big.toString("base64"));
      expect(
        reader
          .readEvents()
          .some((e) => e.kindText === "tool_result" && Buffer.from(e.payload).includes(whole)),
      ).toBe(true);
    } finally {
      reader.close();
    }
  });
});
