// End-to-end hardening of the MCP bridge (issue 31, point 7): the real `agent` binary, a
// scripted model on the loopback fake Anthropic, and a small real stdio MCP server
// (fixtures/hostile-server.mjs) that was given two values through env() — one under a
// secret-looking name, one under a plain name — and returns them encoded every way it can
// (base64 at each alignment, url-safe base64, hex in both cases, percent- and
// form-encoding, reversed), in results, an error result and a resource. None may reach the
// model's requests, stream-json or any file the run writes. The same run asks for results
// of 10 and 50 MiB (text, many blocks, an image, an embedded resource, structured content,
// a resource read): each comes back cut to the budget with a note, the bridge stays up for
// the next call, and its memory stays bounded. A third server's tool list never ends: the
// bridge keeps the first thousand tools and starts.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, records, type Sandbox, sandbox } from "../../../packages/cli/test/helpers.ts";

const SERVER = fileURLToPath(new URL("./fixtures/hostile-server.mjs", import.meta.url));

/** Given under a secret-looking name: spaces, URL-special and non-ASCII characters. */
const TOKEN = "Tk9/q Üz+rB?w&W=3%zYv";
/** Given under a plain name, which the name-based rule never treated as a secret. */
const PLAIN = "Zq7vK2pW9xR4mT8n";

/** The broken server: its environment on stderr, plain and hex-encoded, then exit 2. */
const DYING =
  "const e = process.env; process.stderr.write('given ' + e.PLAIN + ' ' + Buffer.from(e.API_TOKEN).toString('hex') + '\\n'); process.exit(2)";

let sb: Sandbox;
let fake: FakeVendor;
let repo: string;
let env: NodeJS.ProcessEnv;

function config(): string {
  return `
required_providers {
  anthropic = {
    source  = "pluggableharness/anthropic"
    version = ">= 0.1.0"
  }
  hostile = {
    source  = "pluggableharness/mcp"
    version = ">= 0.1.0"
  }
  broken = {
    source  = "pluggableharness/mcp"
    version = ">= 0.1.0"
  }
  endless = {
    source  = "pluggableharness/mcp"
    version = ">= 0.1.0"
  }
}

provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = env("FAKE_ANTHROPIC_URL")
}

# The plain name is read with spellings a pattern over the text would miss.
provider "hostile" {
  command = ${JSON.stringify([process.execPath, SERVER])}
  env = {
    API_TOKEN = env("HOSTILE_TOKEN")
    PLAIN     = env ("PLAIN_\\u004eAME")
  }
}

# A server that prints what it was given to stderr and dies at start-up: the bridge's
# warning quotes that stderr into the kernel's log.
provider "broken" {
  command = ${JSON.stringify([process.execPath, "-e", DYING])}
  env = {
    API_TOKEN = env("HOSTILE_TOKEN")
    PLAIN     = env(/* plain */ "PLAIN_NAME")
  }
}

# A server whose tool list never ends: the bridge reads a bounded part of it and starts.
provider "endless" {
  command            = ${JSON.stringify([process.execPath, SERVER])}
  env                = { ENDLESS = "1" }
  enabled_tools      = ["echo"]
  startup_timeout_ms = 8000
}

agent_profile "default" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-sonnet-5"
    }
  }
  tools     = ["hostile.*", "endless.*"]
  max_turns = 8
}
`;
}

/**
 * Whether any 6-byte piece of `secret` can be read back from `text`: literally, reversed,
 * percent- or form-decoded, or by decoding any run of base64 (standard or url-safe, from
 * each of the four offsets) or hex (from each of the two offsets). Independent of how the
 * masker works: it decodes what is there rather than looking for known encodings.
 */
function recoverable(text: string, secret: string): string | undefined {
  const bytes = Buffer.from(secret, "utf8");
  const windows: Buffer[] = [];
  for (let i = 0; i + 6 <= bytes.length; i++) windows.push(bytes.subarray(i, i + 6));
  const holds = (b: Buffer) => windows.some((w) => b.includes(w));
  if (holds(Buffer.from(text, "utf8"))) return "literal";
  if (holds(Buffer.from([...text].reverse().join(""), "utf8"))) return "reversed";
  const percent = (t: string) =>
    Buffer.from(
      t
        .replace(/\+/g, " ")
        .replace(/%([0-9a-fA-F]{2})/g, (_, h) => String.fromCharCode(Number.parseInt(h, 16))),
      "latin1",
    );
  if (holds(percent(text))) return "percent-encoded";
  for (const run of text.match(/[A-Za-z0-9+/_-]{8,}/g) ?? []) {
    for (let off = 0; off < 4; off++) {
      const part = run.slice(off);
      if (holds(Buffer.from(part.replace(/-/g, "+").replace(/_/g, "/"), "base64"))) return `base64 ${run}`;
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

function leaks(text: string): string[] {
  const out: string[] = [];
  for (const [name, s] of [
    ["HOSTILE_TOKEN", TOKEN],
    ["PLAIN_NAME", PLAIN],
  ] as const) {
    const how = recoverable(text, s);
    if (how) out.push(`${name} (${how})`);
  }
  return out;
}

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.push(join(e.parentPath, e.name));
  }
  return out;
}

/**
 * The highest peak resident size (VmHWM, MiB) of the bridge's own processes, and of the
 * kernel's, sampled until stopped. The plugin sandbox runs the bridge as its own process;
 * as root, where the bridge nests its servers' sandbox outside the plugin sandbox, it is a
 * worker thread of the kernel and only the kernel's process can be measured.
 */
function watchBridgeMemory(): { stop(): { bridge: number; kernel: number } } {
  const peak = { bridge: 0, kernel: 0 };
  const sample = () => {
    for (const pid of readdirSync("/proc")) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
        const which =
          /providers\/mcp\/src\/main\.(ts|mjs)/.test(cmd) && !cmd.startsWith("bwrap")
            ? "bridge"
            : cmd.includes("\0run\0-p\0misbehave\0")
              ? "kernel"
              : undefined;
        if (!which) continue;
        const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
        if (m) peak[which] = Math.max(peak[which], Number(m[1]) / 1024);
      } catch {
        // gone
      }
    }
  };
  const timer = setInterval(sample, 100);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}

beforeAll(async () => {
  sb = sandbox();
  repo = sb.dir("project");
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  env = {
    ...sb.env,
    XDG_CACHE_HOME: sb.dir("cache"),
    ANTHROPIC_API_KEY: "sk-ant-test",
    FAKE_ANTHROPIC_URL: fake.url,
    HOSTILE_TOKEN: TOKEN,
    PLAIN_NAME: PLAIN,
  };
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

describe("an MCP server that leaks its secrets and answers with huge results", () => {
  it("masks every encoding of every env() value, budgets 10 and 50 MiB results, and the bridge lives on", async () => {
    writeFileSync(join(repo, "agent.hcl"), config());
    const call = (name: string, args: Record<string, unknown> = {}) => ({ name: `hostile__${name}`, args });
    fake.push(
      {
        kind: "tool_calls",
        text: "Leak.",
        calls: [call("leak"), call("leak_error"), call("read_resource", { uri: "leak://secret" })],
      },
      {
        kind: "tool_calls",
        text: "Ten.",
        calls: [call("big", { mb: 10 }), call("echo", { message: "after ten" })],
      },
      {
        kind: "tool_calls",
        text: "Fifty.",
        calls: [call("big", { mb: 50 }), call("echo", { message: "after fifty" })],
      },
      {
        kind: "tool_calls",
        text: "Other shapes.",
        calls: [
          call("big", { mb: 10, kind: "image" }),
          call("big", { mb: 10, kind: "blocks" }),
          call("big", { mb: 10, kind: "resource" }),
          call("big", { mb: 5, kind: "structured" }),
          call("read_resource", { uri: "big://10" }),
          call("echo", { message: "still here" }),
          { name: "endless__echo", args: { message: "listed at last" } },
        ],
      },
      { kind: "text", text: "Done." },
    );
    const before = fake.requests.length;
    const memory = watchBridgeMemory();
    const r = await agent(
      ["run", "-p", "misbehave", "--output-format", "stream-json", "--headless-ask", "allow"],
      { cwd: repo, env, timeoutMs: 240_000 },
    );
    const peak = memory.stop();
    // Each check below is independent: all of them report (expect.soft), not just the first.
    // Only the one warning about the dead server (it quotes the server's own stderr, masked).
    const messages = r.stderr.match(/^agent: .*/gm) ?? [];
    expect.soft(messages).toHaveLength(1);
    expect.soft(messages[0]).toContain('agent: warning: MCP server "broken" is unavailable');
    expect.soft(leaks(r.stderr)).toEqual([]);
    expect.soft(r.code).toBe(0);
    const requests = fake.requests.slice(before).map((q) => JSON.stringify(q.json));
    expect.soft(requests).toHaveLength(5);

    // Nothing of either value, in any encoding, in what the model was sent, what stream-json
    // printed, or any file the run wrote (session, WAL, logs, caches).
    const leaked: string[] = [];
    requests.forEach((q, i) => {
      for (const l of leaks(q)) leaked.push(`request ${i + 1}: ${l}`);
    });
    for (const l of leaks(r.stdout)) leaked.push(`stdout: ${l}`);
    for (const f of filesUnder(sb.home)) {
      const bytes = readFileSync(f);
      for (const l of new Set([...leaks(bytes.toString("latin1")), ...leaks(bytes.toString("utf8"))]))
        leaked.push(`${f.slice(sb.home.length)}: ${l}`);
    }
    expect.soft(leaked).toEqual([]);
    // The log path was taken: the broken server's warning, its stderr masked.
    const log = readFileSync(join(sb.home, "state", "agent", "agent.log"), "utf8");
    expect.soft(log).toMatch(/MCP server unavailable.*given \[redacted\] \[redacted\]/);
    // A tool whose name holds a secret is not offered (a masked name could not be called,
    // and vendors refuse names with brackets); the others are.
    const offered = ((records(r.stdout)[0]?.["tools"] ?? []) as Array<{ name: string }>).map((t) => t.name);
    expect.soft(offered).toContain("hostile__leak");
    expect.soft(offered.filter((n) => n.includes("named"))).toEqual([]);
    // The endless tool list was cut, not read until the start-up deadline: its server is up.
    expect.soft(offered).toContain("endless__echo");
    expect.soft(log).toMatch(/endless.*lists more tools than the bridge reads \(1000 tools/);
    // The leaking calls themselves ran: their masked results reached the model.
    expect.soft(requests[1]).toContain("b64=");
    expect.soft(requests[1]).toContain("[redacted]");

    // Results of every size are cut to the budget with a note; the echo after each shows the
    // bridge (and its server) still running: not relaunched, not crashed.
    const results = records(r.stdout).filter((x) => x["type"] === "tool_result");
    const crashed = results.map((x) => JSON.stringify(x)).filter((x) => x.includes("process_crashed"));
    expect.soft(crashed.map((x) => x.slice(0, 300))).toEqual([]);
    for (const i of [2, 3, 4]) {
      expect
        .soft(requests[i], `request ${i + 1}`)
        .toMatch(/\[truncated: the MCP server returned about [\d,]+ bytes of text/);
      expect.soft(requests[i]?.length ?? 0, `request ${i + 1}`).toBeLessThan(600_000);
    }
    expect.soft(requests[2]).toContain("Echo: after ten");
    expect.soft(requests[3]).toContain("Echo: after fifty");
    expect.soft(requests[3]).toContain("about 52,428,808 bytes of text");
    expect.soft(requests[4]).toContain("Echo: still here");
    expect.soft(requests[4]).toContain("Echo: listed at last");
    // The image is described by its real size, not carried; oversized structured content is
    // left out with a note.
    expect.soft(requests[4]).toMatch(/\[image: image\/png, 1048576\d bytes\]/);
    expect.soft(requests[4]).toContain("[structured content left out");
    // Nothing near the size of a result is stored: the session files stay small.
    for (const f of filesUnder(join(sb.home, "state"))) {
      expect.soft(readFileSync(f).length, f).toBeLessThan(4 * 1024 * 1024);
    }
    // A 50 MiB message never sits whole in the bridge: its own process idles at about
    // 105 MiB; a kernel hosting it (and three other plugins) in worker threads at about 300.
    expect.soft(peak.kernel).toBeGreaterThan(0);
    if (peak.bridge > 0) expect.soft(peak.bridge).toBeLessThan(200);
    else expect.soft(peak.kernel).toBeLessThan(450);

    // The commands that start the servers outside a session report what they said, masked
    // the same way: the broken server's stderr in `validate`'s warning and `mcp list`.
    for (const args of [["validate"], ["mcp", "list"], ["providers"]]) {
      const c = await agent(args, { cwd: repo, env, timeoutMs: 120_000 });
      expect.soft(leaks(c.stdout + c.stderr), args.join(" ")).toEqual([]);
      if (args[0] !== "providers")
        expect.soft(c.stdout, args.join(" ")).toMatch(/given \[redacted\] \[redacted\]/);
    }
  }, 300_000);
});
