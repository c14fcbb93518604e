// One language server process and the client side of its LSP session: started lazily,
// initialized with the project root, documents kept in sync with the files on disk, and
// diagnostics collected from publishDiagnostics. Every request has a deadline; a server
// that misses one is stopped (the next call starts a fresh one). The server is told the
// plugin's pid (processId), so it also exits if the plugin dies without cleaning up.
import { type ChildProcess, spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";
import {
  createMessageConnection,
  type MessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from "vscode-jsonrpc/node.js";

export interface LspDiagnostic {
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
  severity?: number;
  code?: number | string;
  source?: string;
  message: string;
}

export interface ServerSpec {
  language: string;
  argv: readonly string[];
  root: string;
  env: NodeJS.ProcessEnv;
  /** The server runs inside bwrap (argv is bwrap's command line). */
  confined?: boolean;
  /** Sent with initialize (server-specific). */
  initializationOptions?: Record<string, unknown>;
  /** Deadline of initialize and of every request. */
  timeoutMs: number;
}

export class ServerTimeout extends Error {}
export class ServerFailed extends Error {}

/** LSP language ids by extension, for didOpen. */
export function languageIdOf(path: string): string {
  if (/\.(tsx)$/.test(path)) return "typescriptreact";
  if (/\.(jsx)$/.test(path)) return "javascriptreact";
  if (/\.(js|mjs|cjs)$/.test(path)) return "javascript";
  if (/\.(ts|mts|cts)$/.test(path)) return "typescript";
  const ext = /\.([^./]+)$/.exec(path)?.[1];
  return ext ?? "plaintext";
}

export class LanguageServer {
  readonly spec: ServerSpec;
  readonly child: ChildProcess;
  private readonly conn: MessageConnection;
  private readonly ready: Promise<void>;
  private readonly opened = new Map<string, { version: number; text: string }>();
  /** Latest diagnostics per document URI, with when they arrived. */
  private readonly published = new Map<string, { at: number; items: LspDiagnostic[] }>();
  private readonly listeners = new Set<() => void>();
  private stderr = "";
  exited = false;
  private exitInfo = "";

  constructor(spec: ServerSpec) {
    this.spec = spec;
    const [file, ...args] = spec.argv;
    this.child = spawn(file!, args, { cwd: spec.root, env: spec.env, stdio: ["pipe", "pipe", "pipe"] });
    this.child.stderr!.setEncoding("utf8").on("data", (d: string) => {
      this.stderr = (this.stderr + d).slice(-4000);
    });
    const died = new Promise<never>((_, reject) => {
      const fail = (why: string) => {
        this.exited = true;
        this.exitInfo = why;
        for (const l of this.listeners) l();
        reject(new ServerFailed(`the ${spec.language} language server ${why}${this.stderrTail()}`));
      };
      this.child.once("error", (e: NodeJS.ErrnoException) =>
        fail(`could not start (${spec.argv[0]}: ${e.code ?? e.message})`),
      );
      this.child.once("exit", (code, signal) => fail(`exited (${signal ?? `code ${code}`})`));
    });
    died.catch(() => {});
    this.conn = createMessageConnection(
      new StreamMessageReader(this.child.stdout!),
      new StreamMessageWriter(this.child.stdin!),
    );
    this.child.stdin!.on("error", () => {});
    this.conn.onError(() => {});
    this.conn.onNotification(
      "textDocument/publishDiagnostics",
      (p: { uri: string; diagnostics: LspDiagnostic[] }) => {
        this.published.set(p.uri, { at: Date.now(), items: p.diagnostics });
        for (const l of this.listeners) l();
      },
    );
    // Requests a server may send its client: answer them rather than leave it waiting.
    this.conn.onRequest("workspace/configuration", (p: { items?: unknown[] }) =>
      (p.items ?? []).map(() => null),
    );
    this.conn.onRequest("client/registerCapability", () => null);
    this.conn.onRequest("window/workDoneProgress/create", () => null);
    this.conn.onRequest("window/showMessageRequest", () => null);
    this.conn.listen();
    this.ready = this.initialize(died);
    this.ready.catch(() => {});
  }

  private async initialize(died: Promise<never>): Promise<void> {
    const rootUri = pathToFileURL(this.spec.root).href;
    await Promise.race([
      died,
      this.deadline(
        this.conn.sendRequest("initialize", {
          processId: this.spec.confined ? null : process.pid,
          rootUri,
          rootPath: this.spec.root,
          workspaceFolders: [{ uri: rootUri, name: "root" }],
          capabilities: {
            textDocument: {
              synchronization: { didSave: true, dynamicRegistration: false },
              publishDiagnostics: { relatedInformation: false, versionSupport: true },
              definition: { linkSupport: false },
              references: {},
            },
            workspace: { workspaceFolders: true, configuration: true },
          },
          initializationOptions: this.spec.initializationOptions ?? {},
        }),
        "initialize",
      ),
    ]);
    this.conn.sendNotification("initialized", {});
  }

  private stderrTail(): string {
    const t = this.stderr.trim();
    return t ? `: ${t.split("\n").slice(-3).join(" | ")}` : "";
  }

  private deadline<T>(p: PromiseLike<T>, what: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new ServerTimeout(
              `the ${this.spec.language} language server did not answer ${what} within ${this.spec.timeoutMs} ms; it was stopped (the next call starts a new one)`,
            ),
          ),
        this.spec.timeoutMs,
      );
      p.then(
        (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        (e) => {
          clearTimeout(timer);
          reject(
            e instanceof Error ? e : new ServerFailed(String((e as { message?: string })?.message ?? e)),
          );
        },
      );
    });
  }

  async whenReady(): Promise<void> {
    await this.ready;
  }

  /** Sends the file's current content (didOpen the first time, didChange after); `text` when already read. */
  async sync(path: string, text?: string): Promise<{ uri: string; changed: boolean }> {
    await this.ready;
    const uri = pathToFileURL(path).href;
    text ??= await readFile(path, "utf8");
    const open = this.opened.get(uri);
    if (!open) {
      this.opened.set(uri, { version: 1, text });
      this.published.delete(uri);
      this.conn.sendNotification("textDocument/didOpen", {
        textDocument: { uri, languageId: languageIdOf(path), version: 1, text },
      });
      return { uri, changed: true };
    }
    if (open.text === text) return { uri, changed: false };
    open.version++;
    open.text = text;
    this.published.delete(uri);
    this.conn.sendNotification("textDocument/didChange", {
      textDocument: { uri, version: open.version },
      contentChanges: [{ text }],
    });
    return { uri, changed: true };
  }

  /**
   * Diagnostics of `uris` once the server has published for each and then been quiet for
   * `settleMs` (servers publish in stages: syntax first, types after), or at the deadline.
   */
  async diagnostics(
    uris: readonly string[],
    settleMs: number,
  ): Promise<Map<string, LspDiagnostic[] | undefined>> {
    const end = Date.now() + this.spec.timeoutMs;
    await new Promise<void>((resolve, reject) => {
      let quiet: NodeJS.Timeout | undefined;
      const finish = (err?: Error) => {
        clearTimeout(quiet);
        clearTimeout(hard);
        this.listeners.delete(check);
        if (err) reject(err);
        else resolve();
      };
      const check = () => {
        if (this.exited)
          return finish(
            new ServerFailed(
              `the ${this.spec.language} language server ${this.exitInfo}${this.stderrTail()}`,
            ),
          );
        if (!uris.every((u) => this.published.has(u))) return;
        const last = Math.max(...uris.map((u) => this.published.get(u)!.at));
        clearTimeout(quiet);
        quiet = setTimeout(() => finish(), Math.max(0, last + settleMs - Date.now()));
      };
      const hard = setTimeout(
        () => {
          if (uris.every((u) => this.published.has(u))) finish();
          else
            finish(
              new ServerTimeout(
                `the ${this.spec.language} language server published no diagnostics for ${uris.length === 1 ? "the file" : "every file"} within ${this.spec.timeoutMs} ms`,
              ),
            );
        },
        Math.max(0, end - Date.now()),
      );
      this.listeners.add(check);
      check();
    });
    return new Map(uris.map((u) => [u, this.published.get(u)?.items]));
  }

  async request<T>(method: string, params: unknown): Promise<T> {
    await this.ready;
    return this.deadline(this.conn.sendRequest(method, params) as PromiseLike<T>, method);
  }

  /** Asks the server to shut down, then kills it if it does not exit within `graceMs`. */
  async stop(graceMs = 1_000): Promise<void> {
    if (this.exited) return;
    const gone = new Promise<void>((r) => this.child.once("exit", () => r()));
    try {
      await Promise.race([this.conn.sendRequest("shutdown"), new Promise((r) => setTimeout(r, graceMs / 2))]);
      this.conn.sendNotification("exit");
    } catch {
      // already broken: kill below
    }
    await Promise.race([gone, new Promise((r) => setTimeout(r, graceMs / 2))]);
    this.kill();
    this.conn.dispose();
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
    // Never handed out again, even before its exit is seen.
    this.exited = true;
    this.exitInfo ||= "was stopped";
  }
}
