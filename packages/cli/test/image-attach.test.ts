// `agent run --image`: the image reaches the vendor as an image block next to the prompt;
// a model without vision support answers invalid_request and nothing is sent; a file that
// is not an image is a usage error before anything starts.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
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
