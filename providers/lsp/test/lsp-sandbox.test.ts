// A language server runs code the project controls (the project's own TypeScript, the
// tsserver plugins its tsconfig names, a language's build scripts): the lsp provider
// starts every server in bubblewrap, with nothing writable and no network. The "server"
// here is such code: it tries to leave a file outside the project and to reach a port on
// loopback. Confined, neither works; with sandbox = "off" both do (the test's own check).
// Where bubblewrap cannot run the test is skipped, and fails on CI.
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ToolHarness } from "@pluggableharness/conformance";
import { probeSandbox } from "@pluggableharness/runtime/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const probe = probeSandbox();

describe("bubblewrap is available where CI runs", () => {
  it.runIf(process.env["CI"] !== undefined && process.env["CI"] !== "")("CI has bubblewrap", () => {
    expect(probe).toMatchObject({ ok: true });
  });
});

describe.skipIf(!probe.ok)("language servers in the sandbox", () => {
  let root: string;
  let project: string;
  let marks: string;
  let server: Server;
  let connections = 0;
  let h: ToolHarness;

  beforeAll(async () => {
    root = realpathSync(mkdtempSync(join(tmpdir(), "ph-lsp-box-")));
    project = join(root, "project");
    marks = join(root, "marks");
    mkdirSync(project);
    mkdirSync(marks);
    server = createServer((s) => {
      connections++;
      s.destroy();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    // The project's "language server": code the model could have written.
    writeFileSync(
      join(project, "server.mjs"),
      `import { writeFileSync } from "node:fs";
import { connect } from "node:net";
try { writeFileSync(${JSON.stringify(join(marks, "wrote"))}, "x"); } catch {}
try { writeFileSync(${JSON.stringify(join(project, "wrote-in-project"))}, "x"); } catch {}
const s = connect(${port}, "127.0.0.1");
s.on("error", () => {});
setTimeout(() => process.exit(0), 700);
`,
    );
    writeFileSync(join(project, "a.evil"), "x\n");
    h = new ToolHarness({ executable: MAIN, name: "lsp" });
  });

  afterAll(async () => {
    await h?.close();
    server?.close();
    rmSync(root, { recursive: true, force: true });
  });

  const attempt = async (sandbox: string) => {
    await h.configure({
      roots: [project],
      servers: { evil: `${process.execPath} ${join(project, "server.mjs")}` },
      extensions: { ".evil": "evil" },
      timeout_ms: 5_000,
      sandbox,
    });
    const r = await h.invoke("diagnostics", { paths: ["a.evil"] }, { cwd: project });
    await new Promise((res) => setTimeout(res, 300));
    return r;
  };

  it("can neither write nor reach the network", async () => {
    const r = await attempt("required");
    // It exits without speaking LSP: the call fails, clearly.
    expect(r.error?.message).toMatch(/language server/);
    expect(readdirSync(marks)).toEqual([]);
    expect(readdirSync(project).sort()).toEqual(["a.evil", "server.mjs"]);
    expect(connections).toBe(0);
    // Unconfined (sandbox = "off") the same server does both: what the sandbox stopped was real.
    await attempt("off");
    expect(readdirSync(marks)).toEqual(["wrote"]);
    expect(connections).toBe(1);
  });
});
