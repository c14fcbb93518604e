import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { parseSse } from "../src/sse-client.ts";

const CLI = fileURLToPath(new URL("../src/cli.ts", import.meta.url));

let child: ChildProcess | undefined;
afterEach(async () => {
  if (child && child.exitCode === null) {
    child.kill("SIGTERM");
    await once(child, "exit");
  }
  child = undefined;
});

function firstLine(proc: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    proc.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf("\n");
      if (nl >= 0) resolve(out.slice(0, nl));
    });
    proc.once("exit", (code) => reject(new Error(`cli exited with ${code} before printing its URL`)));
  });
}

describe("fake-vendor CLI", () => {
  it("prints its URL and answers every vendor with the given text until terminated", async () => {
    child = spawn(process.execPath, [CLI, "--port", "0", "--quiet", "--text", "hello cli", "--chunks", "2"]);
    const url = await firstLine(child);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${url}/v1/messages?beta=true`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": "sk-fake" },
        body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 10, stream: true, messages: [] }),
      });
      const text = parseSse(await res.text())
        .map((e) => (e.json as { delta?: { text?: string } }).delta?.text ?? "")
        .join("");
      expect(text).toBe("hello cli");
    }
    const chat = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", stream: true, messages: [] }),
    });
    expect((await chat.text()).endsWith("data: [DONE]\n\n")).toBe(true);
    child.kill("SIGTERM");
    const [code] = await once(child, "exit");
    expect(code).toBe(0);
  });

  it("exits 2 with usage on a bad argument", async () => {
    child = spawn(process.execPath, [CLI, "--vendor", "nope"]);
    let err = "";
    child.stderr!.on("data", (d: Buffer) => {
      err += d.toString();
    });
    const [code] = await once(child, "exit");
    expect(code).toBe(2);
    expect(err).toContain('unknown vendor "nope"');
    expect(err).toContain("usage: fake-vendor");
  });
});
