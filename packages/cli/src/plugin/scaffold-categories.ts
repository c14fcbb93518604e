// The sources `agent plugin new` writes for the context, memory, hook, frontend, widget
// and slash-command categories: each small, working and conformant, so that its own
// `npm test` (build, then `agent conform`) passes as scaffolded. The generated code uses
// no template literals, so these templates need no escaping.

/** A scaffold's category-specific files, and what its conformance test runs and asserts. */
export interface CategoryScaffold {
  files: Record<string, string>;
  conformArgs: string;
  asserts: string;
}

const HEADER = (
  name: string,
  what: string,
) => `// ${name}: a PluggableHarness ${what}. \`agent plugin build\` bundles this
// file and the SDK into one executable; the agent starts it as its own process.
`;

export function contextScaffold(name: string): CategoryScaffold {
  return {
    files: {
      "src/main.ts": `${HEADER(name, "context provider")}// Before each turn it contributes one section: a notes file of the working directory,
// counted with the kernel's CountTokens and cut to the budget the kernel gives it.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { StatusError, serve, service } from "@pluggableharness/plugin-sdk";
import { AttributeType, DiagnosticSeverity } from "@pluggableharness/protocol/config";
import { Stability } from "@pluggableharness/protocol/content";
import { ContextService } from "@pluggableharness/protocol/context";
import pkg from "../package.json" with { type: "json" };

const DEFAULT_BUDGET = 2_000n;
let file = "NOTES.md";

const text = (t: string) => ({ block: { case: "text" as const, value: { text: t } } });

await serve({
  packageJson: pkg,
  services: [
    service(ContextService, {
      getCapabilities: () => ({
        capabilities: {
          defaultTokenBudget: DEFAULT_BUDGET,
          // STATIC: it changes rarely, so it sits early in the prompt where caches hold it.
          stability: Stability.STATIC,
          configSchema: {
            attributes: [{ name: "file", type: AttributeType.STRING, description: "Notes file, relative to the working directory (default NOTES.md)." }],
          },
        },
      }),
      configure: (req) => {
        const v = req.config?.["file"];
        if (v !== undefined && (typeof v !== "string" || v === "")) {
          // Refusals are diagnostics naming the attribute; never repeat the value itself.
          return { result: { diagnostics: [{ severity: DiagnosticSeverity.ERROR, attributePath: ["file"], summary: "file must be a non-empty path" }] } };
        }
        file = typeof v === "string" ? v : "NOTES.md";
        return { result: {} };
      },
      async contribute(req, ctx) {
        if (req.tokenBudget < 0n) throw new StatusError(3, "token_budget is negative"); // invalid_request
        let body: string;
        try {
          body = (await readFile(join(req.workingDirectory, file), "utf8")).trim();
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === "ENOENT") return { sections: [] };
          throw new StatusError(14, "cannot read " + file); // source_unavailable
        }
        const budget = req.tokenBudget > 0n ? req.tokenBudget : DEFAULT_BUDGET;
        const target = req.modelTarget?.id ? { modelRef: { provider: req.modelTarget.provider, id: req.modelTarget.id } } : {};
        const count = async (t: string) => (await ctx.kernel.countTokens({ content: [text(t)], ...target })).count;
        // Fit the budget ourselves: the kernel never trims a provider's section.
        let tokens = await count(body);
        let truncated = false;
        while (tokens > budget && body !== "") {
          body = body.slice(0, Math.floor((body.length * Number(budget)) / Number(tokens) * 0.9));
          truncated = true;
          tokens = body === "" ? 0n : await count(body);
        }
        if (body === "") return { sections: [] };
        return { sections: [{ label: file, content: [text(body)], tokens, stability: Stability.STATIC, truncated }] };
      },
    }),
  ],
});
`,
      "test/workdir/NOTES.md": "# Notes\n\nThe build runs with `npm test`.\n",
    },
    conformArgs: ', "--workdir", join(root, "test", "workdir")',
    asserts: "  assert.match(r.stdout, /PASS context\\.contribute\\.counted/);",
  };
}

export function memoryScaffold(name: string): CategoryScaffold {
  return {
    files: {
      "src/main.ts": `${HEADER(name, "memory provider")}// It keeps records in the process's memory (replace the Map with your store). Failures
// use the status codes the memory protocol maps its error categories to.
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { StatusError, serve, service } from "@pluggableharness/plugin-sdk";
import { type ContentBlock } from "@pluggableharness/protocol/content";
import { type MemoryRecord, MemoryScope, MemoryService, MemoryType, RecordStatus } from "@pluggableharness/protocol/memory";
import pkg from "../package.json" with { type: "json" };

const TYPES = [MemoryType.USER, MemoryType.FEEDBACK, MemoryType.PROJECT, MemoryType.REFERENCE];
const SCOPES = [MemoryScope.SESSION, MemoryScope.PROJECT];
const DEFAULT_BUDGET = 1_000n;
const NOT_FOUND = 5, INVALID_ARGUMENT = 3, FAILED_PRECONDITION = 9;

type Stored = Omit<MemoryRecord, "$typeName" | "relevanceScore">;
const records = new Map<string, Stored>();

const textOf = (content: readonly ContentBlock[]) => content.map((b) => (b.block.case === "text" ? b.block.value.text : "")).join("\\n");
const slug = (title: string) => title.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "") || "record";
const find = (id: string) => {
  const r = records.get(id);
  if (!r) throw new StatusError(NOT_FOUND, "no memory record " + JSON.stringify(id)); // not_found
  return r;
};

await serve({
  packageJson: pkg,
  services: [
    service(MemoryService, {
      getCapabilities: () => ({
        capabilities: { defaultTokenBudget: DEFAULT_BUDGET, supportedTypes: TYPES, supportedScopes: SCOPES, ratificationSupported: false, configSchema: { attributes: [] } },
      }),
      configure: () => ({ result: {} }),
      async record(req, ctx) {
        if (!TYPES.includes(req.type)) throw new StatusError(INVALID_ARGUMENT, "invalid_type: this provider does not keep that type");
        if (!SCOPES.includes(req.scope)) throw new StatusError(INVALID_ARGUMENT, "invalid_scope: this provider does not keep that scope");
        let id = req.id || slug(req.title);
        for (let n = 2; !req.id && records.has(id); n++) id = slug(req.title) + "-" + n;
        const { count } = await ctx.kernel.countTokens({ content: req.content });
        const now = timestampNow();
        records.set(id, {
          id, type: req.type, scope: req.scope, title: req.title, content: req.content, tokens: count,
          status: RecordStatus.CANONICAL, links: req.links, createdAt: now, updatedAt: now, provenance: req.provenance,
        });
        return { result: { id, status: RecordStatus.CANONICAL } };
      },
      async updateRecord(req, ctx) {
        const r = find(req.id);
        // Content is replaced wholesale; type and scope never change.
        r.content = req.content;
        if (req.title !== undefined) r.title = req.title;
        r.tokens = (await ctx.kernel.countTokens({ content: req.content })).count;
        r.updatedAt = timestampNow();
        return { result: { id: r.id, status: r.status } };
      },
      deleteRecord: (req) => {
        find(req.id);
        records.delete(req.id);
        return { result: { deleted: true } };
      },
      getRecord: (req) => ({ record: find(req.id) }),
      listRecords: (req) => ({
        records: [...records.values()].filter(
          (r) => (req.typeFilter.length === 0 || req.typeFilter.includes(r.type)) && (req.scopeFilter.length === 0 || req.scopeFilter.includes(r.scope)),
        ),
      }),
      recall: (req) => {
        if (req.tokenBudget < 0n) throw new StatusError(INVALID_ARGUMENT, "token_budget is negative");
        const words = (req.query ?? "").toLowerCase().split(/\\W+/).filter((w) => w !== "");
        const score = (r: Stored) => {
          if (words.length === 0) return 1;
          const hay = (r.title + " " + textOf(r.content)).toLowerCase();
          return words.filter((w) => hay.includes(w)).length / words.length; // in [0, 1]
        };
        const budget = req.tokenBudget > 0n ? req.tokenBudget : DEFAULT_BUDGET;
        const out: MemoryRecord[] = [];
        let used = 0n;
        const ranked = [...records.values()].map((r) => ({ r, s: score(r) })).filter((x) => x.s > 0).sort((a, b) => b.s - a.s);
        for (const { r, s } of ranked) {
          if (used + r.tokens > budget) continue;
          used += r.tokens;
          out.push({ ...r, $typeName: "pluggableharness.memory.v1.MemoryRecord", relevanceScore: s });
        }
        return { records: out };
      },
      // No drafts to ratify here: ratificationSupported is false.
      approveRecord: () => {
        throw new StatusError(FAILED_PRECONDITION, "ratification_unsupported");
      },
      rejectRecord: () => {
        throw new StatusError(FAILED_PRECONDITION, "ratification_unsupported");
      },
    }),
  ],
});
`,
    },
    conformArgs: "",
    asserts:
      "  assert.match(r.stdout, /PASS memory\\.delete/);\n  assert.match(r.stdout, /PASS memory\\.recall/);",
  };
}

export function hookScaffold(name: string): CategoryScaffold {
  return {
    files: {
      "src/main.ts": `${HEADER(name, "hook subscriber")}// Subscribe it in agent.hcl with hook {} blocks. Each dispatch is answered in the mode it
// was made in: observe is acknowledged, transform returns the payload (unchanged here),
// veto decides; here a tool call whose arguments mention "rm -rf /" is denied.
import { serve, service } from "@pluggableharness/plugin-sdk";
import { HookDecision, HookMode, HookSubscriberService } from "@pluggableharness/protocol/hook";
import pkg from "../package.json" with { type: "json" };

await serve({
  packageJson: pkg,
  services: [
    service(HookSubscriberService, {
      dispatchHook(req) {
        if (req.mode === HookMode.TRANSFORM) return { outcome: { case: "transform", value: { payload: req.payload } } };
        if (req.mode === HookMode.VETO) {
          const p = req.payload?.point;
          const args = p?.case === "preToolCall" ? JSON.stringify(p.value.call?.arguments ?? {}) : "";
          return args.includes("rm -rf /")
            ? { outcome: { case: "veto", value: { decision: HookDecision.DENY, reason: "removes the root directory" } } }
            : { outcome: { case: "veto", value: { decision: HookDecision.ALLOW } } };
        }
        return { outcome: { case: "observe", value: {} } };
      },
    }),
  ],
});
`,
    },
    conformArgs: "",
    asserts:
      "  assert.match(r.stdout, /PASS hook\\.transform/);\n  assert.match(r.stdout, /PASS hook\\.veto/);",
  };
}

export function frontendScaffold(name: string): CategoryScaffold {
  return {
    files: {
      "src/main.ts": `${HEADER(name, "frontend provider")}// It declares what it paints and takes its configuration. A running frontend dials the
// kernel's FrontendService.Attach over the go-plugin broker once configured (the
// first-party terminal UI's providers/tui/src/attach.ts shows how); this one stays passive.
import { serve, service } from "@pluggableharness/plugin-sdk";
import { AttributeType, DiagnosticSeverity } from "@pluggableharness/protocol/config";
import { FrontendService } from "@pluggableharness/protocol/frontend";
import { Region } from "@pluggableharness/protocol/render";
import pkg from "../package.json" with { type: "json" };

let theme = "light";

await serve({
  packageJson: pkg,
  services: [
    service(FrontendService, {
      getCapabilities: () => ({
        capabilities: {
          supportedRegions: [Region.MAIN_CHAT, Region.OVERLAY],
          configSchema: { attributes: [{ name: "theme", type: AttributeType.STRING, description: "light or dark" }] },
        },
      }),
      configure: (req) => {
        const v = req.config?.["theme"] ?? "light";
        if (v !== "light" && v !== "dark") {
          return { result: { diagnostics: [{ severity: DiagnosticSeverity.ERROR, attributePath: ["theme"], summary: "theme must be light or dark" }] } };
        }
        theme = v;
        return { result: {} };
      },
    }),
  ],
});
void theme;
`,
    },
    conformArgs: "",
    asserts: "  assert.match(r.stdout, /PASS frontend\\.configure\\.in_band/);",
  };
}

export function widgetScaffold(name: string): CategoryScaffold {
  return {
    files: {
      "src/main.ts": `${HEADER(name, "widget provider")}// A sidebar line counting the session's tool calls. Widgets keep no data feed of their
// own: the kernel dispatches the hook points named in supportedHookPoints to this
// plugin in observe mode, and Attach streams the session's view whenever it changes.
import { StatusError, serve, service } from "@pluggableharness/plugin-sdk";
import { HookPoint } from "@pluggableharness/protocol/common";
import { HookSubscriberService } from "@pluggableharness/protocol/hook";
import { Region } from "@pluggableharness/protocol/render";
import { WidgetService } from "@pluggableharness/protocol/widget";
import pkg from "../package.json" with { type: "json" };

const calls = new Map<string, number>();
const waiting = new Map<string, Set<() => void>>();
const changed = (session: string) => {
  for (const wake of waiting.get(session) ?? []) wake();
};

await serve({
  packageJson: pkg,
  services: [
    service(WidgetService, {
      getCapabilities: () => ({
        capabilities: { regions: [Region.SIDEBAR], configSchema: { attributes: [] }, supportedHookPoints: [HookPoint.POST_TOOL_CALL] },
      }),
      configure: () => ({ result: {} }),
      async *attach(req, ctx) {
        if (!req.sessionId) throw new StatusError(3, "Attach needs a session_id"); // session-scoped
        const wakers = waiting.get(req.sessionId) ?? new Set();
        waiting.set(req.sessionId, wakers);
        while (!ctx.signal.aborted) {
          const n = calls.get(req.sessionId) ?? 0;
          yield { region: Region.SIDEBAR, replace: true, content: { root: { node: { case: "text", value: { content: n + " tool calls" } } } } };
          await new Promise<void>((resolve) => {
            const wake = () => {
              wakers.delete(wake);
              resolve();
            };
            wakers.add(wake);
            ctx.signal.addEventListener("abort", wake, { once: true });
          });
        }
      },
    }),
    service(HookSubscriberService, {
      dispatchHook(req) {
        const session = req.callContext?.sessionId;
        if (session && req.payload?.point.case === "postToolCall") {
          calls.set(session, (calls.get(session) ?? 0) + 1);
          changed(session);
        }
        return { outcome: { case: "observe", value: {} } };
      },
    }),
  ],
});
`,
    },
    conformArgs: "",
    asserts: "  assert.match(r.stdout, /PASS widget\\.attach\\.hook_driven/);",
  };
}

export function slashCommandScaffold(name: string): CategoryScaffold {
  return {
    files: {
      "src/main.ts": `${HEADER(name, "slash-command provider")}// Slash commands are declared by a provider of any category; this one is a tool
// provider. /now runs its tool directly (through the gate, without a model turn);
// /explain expands a template into an ordinary user message.
import { s, serveTools, type ToolDefinition } from "@pluggableharness/tool-kit";
import pkg from "../package.json" with { type: "json" };

const now: ToolDefinition<Record<string, never>> = {
  name: "now",
  kind: "data_source",
  risk: "read_only",
  description: "The current date and time (UTC, ISO 8601).",
  input: s.object({}, []),
  output: s.object({ utc: s.string("ISO 8601 timestamp.") }, ["utc"]),
  streaming: false,
  concurrency: { safe: true },
  idempotent: false,
  async invoke() {
    return { utc: new Date().toISOString() };
  },
};

await serveTools(pkg, {
  tools: [now],
  slashCommands: () => [
    { name: "now", description: "Show the current time", toolName: "now" },
    { name: "explain", description: "Explain something briefly", template: "Explain {arg} in two sentences." },
  ],
});
`,
    },
    conformArgs: "",
    asserts:
      "  assert.match(r.stdout, /PASS slash\\.command\\.now/);\n  assert.match(r.stdout, /PASS slash\\.command\\.explain/);",
  };
}
