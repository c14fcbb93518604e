// `agent run --image`: the image reaches the vendor as an image block next to the prompt;
// a model without vision support answers invalid_request and nothing is sent; a file that
// is not an image is a usage error before anything starts. Images larger than the model
// takes are fitted to it (per vendor: the fake received an image within that vendor's
// limits) while the session file keeps the original; a corrupt image becomes a note and
// the turn completes.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor, type VendorId } from "@pluggableharness/fake-vendors";
import { decode, encodeJpeg, encodePng, imageHeader, type Rgba } from "@pluggableharness/image-kit";
import { openSessionReader } from "@pluggableharness/state";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, PNG, records, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor | undefined;

beforeAll(() => {
  sb = sandbox();
});
afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

describe("agent run --image", () => {
  it("sends the image to a vision model as an image block", async () => {
    const repo = sb.repo("img");
    writeFileSync(join(repo, "shot.png"), PNG);
    fake = await startFakeVendor({
      vendor: "anthropic",
      script: [{ kind: "text", text: "A single pixel." }],
    });
    const r = await agent(["run", "-p", "what is in the picture?", "--image", "shot.png"], {
      cwd: repo,
      env: { ...sb.env, ANTHROPIC_API_KEY: "sk-ant-test", FAKE_ANTHROPIC_URL: fake.url, FIXTURE_ROOT: repo },
    });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("A single pixel.");
    const body = fake.requests.at(-1)!.json as { messages: { role: string; content: unknown[] }[] };
    const user = body.messages.find((m) => m.role === "user")!;
    expect(user.content).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: "text", text: "what is in the picture?" }),
        expect.objectContaining({
          type: "image",
          source: { type: "base64", media_type: "image/png", data: PNG.toString("base64") },
        }),
      ]),
    );
    await fake.close();
    fake = undefined;
  });

  it("refuses an image for a model without vision as invalid_request, and sends nothing", async () => {
    const dir = sb.dir("novision");
    writeFileSync(join(dir, "shot.png"), PNG);
    fake = await startFakeVendor({ vendor: "openai-chat", script: [{ kind: "text", text: "unreachable" }] });
    // Zero-config OpenAI-compatible server: its models declare no vision.
    const r = await agent(["run", "-p", "describe it", "--image", "shot.png", "--output-format", "json"], {
      cwd: dir,
      env: { ...sb.env, OPENAI_BASE_URL: `${fake.url}/v1`, OPENAI_MODEL: "demo" },
    });
    const [result] = records(r.stdout);
    expect(result).toMatchObject({ type: "result", is_error: true });
    expect(JSON.stringify(result)).toMatch(/invalid_request/);
    expect(JSON.stringify(result)).toMatch(/no vision support|vision/);
    expect(fake.requests.filter((q) => q.path.includes("chat/completions"))).toHaveLength(0);
    await fake.close();
    fake = undefined;
  });

  it("refuses a file that is not an image before anything starts", async () => {
    const dir = sb.dir("notimage");
    writeFileSync(join(dir, "fake.png"), "not a png");
    const r = await agent(["run", "-p", "x", "--image", "fake.png"], { cwd: dir, env: sb.env });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--image: fake.png is not a PNG, JPEG, GIF or WebP image");
  });
});

/** A gradient with some texture: a screenshot-like picture that compresses as one would. */
function picture(width: number, height: number): Rgba {
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++)
      data.set([(x * 255) / width, (y * 255) / height, (x ^ y) & 0x3f, 255], (y * width + x) * 4);
  return { width, height, data };
}

/** Every inline image in a request body, wherever the vendor puts it. */
function imagesIn(json: unknown): Array<{ mediaType: string; data: Buffer }> {
  const out: Array<{ mediaType: string; data: Buffer }> = [];
  const visit = (v: unknown) => {
    if (Array.isArray(v)) return v.forEach(visit);
    if (!v || typeof v !== "object") return;
    const o = v as Record<string, unknown>;
    if (o["type"] === "base64" && typeof o["data"] === "string")
      out.push({ mediaType: String(o["media_type"]), data: Buffer.from(o["data"], "base64") });
    const inline = o["inlineData"] as Record<string, string> | undefined;
    if (inline && typeof inline === "object")
      out.push({ mediaType: inline["mimeType"]!, data: Buffer.from(inline["data"]!, "base64") });
    const url = typeof o["image_url"] === "string" ? o["image_url"] : undefined;
    const m = url ? /^data:([^;]+);base64,(.*)$/.exec(url) : null;
    if (m) out.push({ mediaType: m[1]!, data: Buffer.from(m[2]!, "base64") });
    for (const x of Object.values(o)) visit(x);
  };
  visit(json);
  return out;
}

const sessionsDir = () => join(sb.env["XDG_STATE_HOME"]!, "agent", "sessions");

/** Whether the session's message events hold `bytes` verbatim. */
function sessionKeeps(sessionId: string, bytes: Uint8Array): boolean {
  const reader = openSessionReader(sessionId, { dir: sessionsDir() });
  try {
    return reader
      .readEvents()
      .some((e) => e.kindText === "message" && Buffer.from(e.payload).includes(Buffer.from(bytes)));
  } finally {
    reader.close();
  }
}

interface Vendor {
  vendor: VendorId;
  provider: string;
  model: string;
  key: string;
  suffix: string;
}

function hcl(v: Vendor): string {
  return `
required_providers {
  ${v.provider} = { source = "pluggableharness/${v.provider}", version = ">= 0.1.0" }
  filesystem = { source = "pluggableharness/filesystem", version = ">= 0.1.0" }
}
provider "${v.provider}" {
  api_key  = env("K")
  base_url = env("FAKE_URL")
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
      provider = "${v.provider}"
      id       = "${v.model}"
    }
  }
  tools     = ["filesystem.*"]
  max_turns = 4
}
`;
}

async function runImage(v: Vendor, name: string, file: Buffer, script: Parameters<FakeVendor["push"]>) {
  const dir = sb.dir(`fit-${v.provider}-${name}`);
  writeFileSync(join(dir, "agent.hcl"), hcl(v));
  writeFileSync(join(dir, name), file);
  writeFileSync(join(dir, "notes.txt"), "hello\n");
  fake = await startFakeVendor({ vendor: v.vendor, validate: true, models: [v.model] });
  fake.push(...script);
  const r = await agent(
    ["run", "-p", "what is in the picture?", "--image", name, "--output-format", "json"],
    {
      cwd: dir,
      env: { ...sb.env, K: v.key, FAKE_URL: `${fake.url}${v.suffix}`, FIXTURE_ROOT: dir },
      timeoutMs: 90_000,
    },
  );
  const requests = fake.requests;
  await fake.close();
  fake = undefined;
  return { r, requests };
}

const ANTHROPIC: Vendor = {
  vendor: "anthropic",
  provider: "anthropic",
  model: "claude-sonnet-5",
  key: "sk-ant-test",
  suffix: "",
};
const OPENAI: Vendor = {
  vendor: "openai-responses",
  provider: "openai",
  model: "gpt-5.6-sol",
  key: "sk-test",
  suffix: "/v1",
};
const GOOGLE: Vendor = {
  vendor: "gemini",
  provider: "google",
  model: "gemini-3.8-flash",
  key: "AIza-test",
  suffix: "",
};

describe("images are fitted to each vendor's limits before they are sent", () => {
  it("Anthropic: a 3000x2000 PNG goes as a PNG within 1568 px and 1.15 MP, the same bytes every request; the session keeps the original", async () => {
    const original = Buffer.from(encodePng(picture(3000, 2000)));
    const { r, requests } = await runImage(ANTHROPIC, "shot.png", original, [
      { kind: "tool_calls", calls: [{ name: "filesystem__read_file", args: { path: "notes.txt" } }] },
      { kind: "text", text: "A gradient." },
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ result: "A gradient." });
    expect(requests.every((q) => q.rejected === undefined)).toBe(true);
    expect(requests).toHaveLength(2);
    const [first] = imagesIn(requests[0]!.json);
    expect(first!.mediaType).toBe("image/png");
    const h = imageHeader(first!.data)!;
    expect(h).toMatchObject({ mediaType: "image/png" });
    expect(Math.max(h.width, h.height)).toBeLessThanOrEqual(1568);
    expect(h.width * h.height).toBeLessThanOrEqual(1_150_000);
    expect(Math.abs(h.width / h.height - 1.5)).toBeLessThan(0.01);
    expect(first!.data.toString("base64").length).toBeLessThanOrEqual(5 * 1024 * 1024);
    expect(decode(first!.data, "image/png").width).toBe(h.width);
    // The model is told the size it is looking at.
    expect(JSON.stringify(requests[0]!.json)).toContain(
      `image downscaled from 3000x2000 to ${h.width}x${h.height} pixels`,
    );
    // The second request (after the tool call) carries byte-identical image data.
    expect(imagesIn(requests[1]!.json)[0]!.data.equals(first!.data)).toBe(true);
    expect(sessionKeeps(String(JSON.parse(r.stdout).session_id), original)).toBe(true);
  });

  it("OpenAI: a 3000x2000 JPEG goes as a JPEG within 2048 px", async () => {
    const original = Buffer.from(encodeJpeg(picture(3000, 2000), 90));
    const { r, requests } = await runImage(OPENAI, "photo.jpg", original, [
      { kind: "text", text: "A photo." },
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(requests.every((q) => q.rejected === undefined)).toBe(true);
    const [img] = imagesIn(requests.at(-1)!.json);
    expect(img!.mediaType).toBe("image/jpeg");
    expect(imageHeader(img!.data)).toMatchObject({ mediaType: "image/jpeg", width: 2048, height: 1365 });
    expect(img!.data.length).toBeLessThan(original.length);
    expect(sessionKeeps(String(JSON.parse(r.stdout).session_id), original)).toBe(true);
  });

  it("Google: a 4000x1000 PNG goes within 3072 px", async () => {
    const original = Buffer.from(encodePng(picture(4000, 1000)));
    const { r, requests } = await runImage(GOOGLE, "wide.png", original, [{ kind: "text", text: "Wide." }]);
    expect(r.code, r.stderr).toBe(0);
    const [img] = imagesIn(requests.at(-1)!.json);
    expect(imageHeader(img!.data)).toMatchObject({ mediaType: "image/png", width: 3072, height: 768 });
  });

  it("a corrupt image becomes a clear note to the model and the operator, and the turn completes", async () => {
    // A PNG signature and header for 3000x2000, then garbage: passes the CLI's sniff.
    const corrupt = Buffer.concat([
      Buffer.from(encodePng(picture(3000, 2000))).subarray(0, 33),
      Buffer.alloc(2000, 7),
    ]);
    const { r, requests } = await runImage(ANTHROPIC, "broken.png", corrupt, [
      { kind: "text", text: "I cannot see it." },
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ result: "I cannot see it." });
    expect(r.stderr).toMatch(
      /an image was not sent to claude-sonnet-5: the PNG image of 3000x2000 pixels, 2033 bytes is corrupt/,
    );
    const body = requests.at(-1)!.json;
    expect(imagesIn(body)).toEqual([]);
    expect(JSON.stringify(body)).toMatch(
      /\[image not sent: the PNG image of 3000x2000 pixels, 2033 bytes is corrupt/,
    );
  });
});
