// The memory provider's executable: a MemoryService and, in the same process, a
// ToolService for memory.remember / memory.forget / memory.search and the
// HookSubscriberService of its autonomous write path (src/autonomous.ts).

import { isAbsolute, join } from "node:path";
import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { kernelForRequest, StatusError, serve, service } from "@pluggableharness/plugin-sdk";
import { HookPoint } from "@pluggableharness/protocol/common";
import type { ContentBlock } from "@pluggableharness/protocol/content";
import { HookSubscriberService } from "@pluggableharness/protocol/hook";
import {
  type MemoryRecord,
  MemoryRecordSchema,
  MemoryScope,
  MemoryService,
  MemoryType,
  RecordStatus,
} from "@pluggableharness/protocol/memory";
import {
  type ConfigField,
  checkTokenBudget,
  configError,
  configSchema,
  type Diagnostic,
  readConfig,
  TOKEN_BUDGET_FIELD,
  tokenCounter,
  toolService,
} from "@pluggableharness/tool-kit";
import { AUTO_RECORDER, draftTurn, reconcileSession } from "./autonomous.ts";
import { SCOPE_NUMBER, TYPE_NUMBER, textBlocks, writeThroughKernel } from "./kernel-write.ts";
import { MarkdownStore } from "./markdown-store.ts";
import { Memory, MemoryFailure } from "./memory.ts";
import { SCOPES, type ScopeName, type StoredRecord, TYPES, type TypeName } from "./record.ts";
import { SqliteStore } from "./sqlite-store.ts";
import { dataHome, type MemoryStore, rootsFor } from "./store.ts";
import { forgetTool, rememberTool, searchTool } from "./tools.ts";

const DEFAULT_TOKEN_BUDGET = 1_500;

const CONFIG: readonly ConfigField[] = [
  TOKEN_BUDGET_FIELD,
  {
    name: "store",
    type: "string",
    default: "markdown",
    description:
      'Where records live: "markdown" (human-editable files) or "sqlite" (one database per root, full-text indexed).',
  },
  {
    name: "global_dir",
    type: "string",
    path: true,
    default: "",
    description:
      "Directory of global records (default: $XDG_DATA_HOME/agent/memory, else ~/.local/share/agent/memory).",
  },
  {
    name: "recall",
    type: "bool",
    default: true,
    description: "Show the most relevant records in every turn's context (memory.search works either way).",
  },
];

const TYPE_OF: Record<TypeName, MemoryType> = {
  user: MemoryType.USER,
  feedback: MemoryType.FEEDBACK,
  project: MemoryType.PROJECT,
  reference: MemoryType.REFERENCE,
};
const SCOPE_OF: Record<ScopeName, MemoryScope> = {
  session: MemoryScope.SESSION,
  project: MemoryScope.PROJECT,
  global: MemoryScope.GLOBAL,
};
const typeName = (t: MemoryType) => TYPES.find((n) => TYPE_OF[n] === t);
const scopeName = (s: MemoryScope) => SCOPES.find((n) => SCOPE_OF[n] === s);

const DEFAULT_GLOBAL_DIR = join(dataHome(), "agent", "memory");
let globalDir = DEFAULT_GLOBAL_DIR;
let storeKind = "markdown";
let recallEnabled = true;
let store: MemoryStore = new MarkdownStore();
let memory = new Memory(store, TYPES, SCOPES);
/** The last working directory a call named: where a call without one looks. */
let lastWorkingDirectory: string | undefined;

function roots(workingDirectory: string | undefined) {
  if (workingDirectory) lastWorkingDirectory = workingDirectory;
  if (!lastWorkingDirectory)
    throw new MemoryFailure(
      "invalid_argument",
      "call_context.working_directory is required: it decides the project",
    );
  return rootsFor(lastWorkingDirectory, globalDir);
}

function applyConfig(values: JsonObject): Diagnostic[] {
  const problems = checkTokenBudget(values["token_budget"]);
  const kind = values["store"] as string;
  if (kind !== "markdown" && kind !== "sqlite")
    problems.push(configError(["store"], `store must be "markdown" or "sqlite", not "${kind}"`));
  const dir = values["global_dir"] as string;
  if (dir && !isAbsolute(dir)) problems.push(configError(["global_dir"], `${dir} is not an absolute path`));
  if (problems.length > 0) return problems;
  recallEnabled = values["recall"] as boolean;
  globalDir = (values["global_dir"] as string) || DEFAULT_GLOBAL_DIR;
  if (kind !== storeKind) {
    store.close();
    store = kind === "sqlite" ? new SqliteStore() : new MarkdownStore();
    storeKind = kind;
    memory = new Memory(store, TYPES, SCOPES);
  }
  return [];
}

function configure(config: JsonObject | undefined): Diagnostic[] {
  const { values, diagnostics } = readConfig(CONFIG, config);
  if (diagnostics.length === 0) diagnostics.push(...applyConfig(values));
  return diagnostics;
}

const textOf = (content: readonly ContentBlock[]) =>
  content.map((b) => (b.block.case === "text" ? b.block.value.text : "")).join("\n");

function toProto(r: StoredRecord, tokens: number, score?: number): MemoryRecord {
  return create(MemoryRecordSchema, {
    id: r.id,
    type: TYPE_OF[r.type],
    scope: SCOPE_OF[r.scope],
    title: r.title,
    content: [{ block: { case: "text", value: { text: r.content } } }],
    tokens: BigInt(tokens),
    status: r.status === "pending" ? RecordStatus.PENDING : RecordStatus.CANONICAL,
    links: r.links,
    createdAt: timestampFromDate(new Date(r.createdAt)),
    updatedAt: timestampFromDate(new Date(r.updatedAt)),
    provenance: r.provenance,
    ...(score !== undefined ? { relevanceScore: score } : {}),
  });
}

/** Memory failures as the gRPC codes the memory protocol maps its categories to. */
function asStatus(err: unknown): never {
  if (err instanceof MemoryFailure) {
    const code = { not_found: 5, invalid_type: 3, invalid_scope: 3, invalid_argument: 3, secret: 3 }[
      err.category
    ];
    throw new StatusError(code, err.message);
  }
  const e = err as NodeJS.ErrnoException;
  if (
    e?.code === "EACCES" ||
    e?.code === "EROFS" ||
    e?.code === "ENOSPC" ||
    /SQLITE_BUSY|locked/.test(e?.message ?? "")
  )
    throw new StatusError(14, `memory storage unavailable: ${e.message}`);
  throw new StatusError(13, (err as Error)?.message ?? String(err));
}

const host = { memory: () => memory, roots, now: () => new Date() };

await serve({
  packageJson: new URL("../package.json", import.meta.url),
  onShutdown: () => store.close(),
  services: [
    service(MemoryService, {
      getCapabilities: () => ({
        capabilities: {
          defaultTokenBudget: BigInt(DEFAULT_TOKEN_BUDGET),
          supportedTypes: TYPES.map((t) => TYPE_OF[t]),
          supportedScopes: SCOPES.map((s) => SCOPE_OF[s]),
          ratificationSupported: true,
          configSchema: configSchema(CONFIG),
          supportedHookPoints: [HookPoint.POST_MODEL_RESPONSE, HookPoint.SESSION_END],
        },
      }),
      configure: (req) => ({ result: { diagnostics: configure(req.config) } }),
      async recall(req, ctx) {
        if (req.tokenBudget < 0n) throw new StatusError(3, "token_budget is negative");
        if (!recallEnabled && req.query === undefined) return { records: [] };
        const count = tokenCounter(kernelForRequest(ctx.kernel, req), req.modelTarget);
        try {
          const found = await memory.recall(
            roots(req.workingDirectory),
            {
              sessionId: req.sessionId,
              ancestors: req.ancestorSessionIds,
              budget: req.tokenBudget > 0n ? Number(req.tokenBudget) : DEFAULT_TOKEN_BUDGET,
              ...(req.query !== undefined ? { query: req.query } : {}),
              filesTouched: req.filesTouched,
              types: req.typeFilter.map(typeName).filter((t) => t !== undefined),
              scopes: req.scopeFilter.map(scopeName).filter((s) => s !== undefined),
              includePending: req.includePending,
              now: Date.now(),
            },
            count,
          );
          return { records: found.map((f) => toProto(f.record, f.tokens, f.score)) };
        } catch (err) {
          asStatus(err);
        }
      },
      async record(req, ctx) {
        const type = typeName(req.type);
        const scope = scopeName(req.scope);
        if (!type) throw new StatusError(3, "type is not a memory type");
        if (!scope) throw new StatusError(3, "scope is not a memory scope");
        try {
          const rec = memory.record(
            roots(ctx.callContext?.workingDirectory),
            {
              type,
              scope,
              ...(req.id !== undefined ? { id: req.id } : {}),
              title: req.title,
              content: textOf(req.content),
              // The kernel parsed them (memory protocol: links are the kernel's job).
              links: req.links,
              ...(req.status === RecordStatus.PENDING ? { status: "pending" as const } : {}),
              provenance: {
                sourceSessionId: req.provenance?.sourceSessionId ?? "",
                ...(req.provenance?.sourceTurnId ? { sourceTurnId: req.provenance.sourceTurnId } : {}),
                recordedBy: req.provenance?.recordedBy ?? "",
              },
            },
            new Date().toISOString(),
          );
          return {
            result: {
              id: rec.id,
              status: rec.status === "pending" ? RecordStatus.PENDING : RecordStatus.CANONICAL,
            },
          };
        } catch (err) {
          asStatus(err);
        }
      },
      async updateRecord(req, ctx) {
        try {
          const rec = memory.update(
            roots(ctx.callContext?.workingDirectory),
            req.id,
            textOf(req.content),
            req.title,
            new Date().toISOString(),
            req.links,
          );
          return { result: { id: rec.id, status: RecordStatus.CANONICAL } };
        } catch (err) {
          asStatus(err);
        }
      },
      async deleteRecord(req, ctx) {
        try {
          memory.delete(roots(ctx.callContext?.workingDirectory), req.id);
          return { result: { deleted: true } };
        } catch (err) {
          asStatus(err);
        }
      },
      async listRecords(req, ctx) {
        const types = req.typeFilter.map(typeName).filter((t) => t !== undefined);
        const scopes = req.scopeFilter.map(scopeName).filter((s) => s !== undefined);
        let where: ReturnType<typeof roots>;
        try {
          where = roots(ctx.callContext?.workingDirectory);
        } catch (err) {
          asStatus(err);
        }
        const all = memory.store
          .list(where)
          .filter(
            (r) =>
              (types.length === 0 || types.includes(r.type)) &&
              (scopes.length === 0 || scopes.includes(r.scope)) &&
              (req.statusFilter === undefined ||
                (req.statusFilter === RecordStatus.PENDING) === (r.status === "pending")),
          );
        const start = req.pageToken ? Number.parseInt(req.pageToken, 10) : 0;
        if (!Number.isInteger(start) || start < 0)
          throw new StatusError(3, "page_token is not one this provider gave");
        const size = req.pageSize > 0 ? Math.min(req.pageSize, 200) : 50;
        const page = all.slice(start, start + size);
        const count = tokenCounter(ctx.kernel, undefined);
        const records = await Promise.all(page.map(async (r) => toProto(r, await count(r.content))));
        return { records, nextPageToken: start + size < all.length ? String(start + size) : "" };
      },
      async getRecord(req, ctx) {
        try {
          const r = memory.get(roots(ctx.callContext?.workingDirectory), req.id);
          return { record: toProto(r, await tokenCounter(ctx.kernel, undefined)(r.content)) };
        } catch (err) {
          asStatus(err);
        }
      },
      approveRecord(req, ctx) {
        try {
          const rec = memory.approve(
            roots(ctx.callContext?.workingDirectory),
            req.id,
            new Date().toISOString(),
          );
          return { result: { id: rec.id, status: RecordStatus.CANONICAL } };
        } catch (err) {
          asStatus(err);
        }
      },
      rejectRecord(req, ctx) {
        try {
          const where = roots(ctx.callContext?.workingDirectory);
          const rec = memory.get(where, req.id);
          if (rec.status !== "pending")
            throw new StatusError(9, `"${req.id}" is canonical, not a pending draft: use DeleteRecord`);
          memory.delete(where, req.id);
          return { result: { deleted: true } };
        } catch (err) {
          if (err instanceof StatusError) throw err;
          asStatus(err);
        }
      },
      render: () => ({}),
    }),
    service(HookSubscriberService, {
      // Observe mode: the answer is always an empty observe; a failure is the kernel's
      // hook_error and never touches the turn.
      async dispatchHook(req, ctx) {
        const cc = req.callContext;
        const p = req.payload?.point;
        if (cc?.sessionId && cc.workingDirectory) {
          // Drafts and their reconciliation go through the kernel like the tools' writes,
          // so each is a memory event in the session.
          const via = {
            kernel: ctx.kernel,
            sessionId: cc.sessionId,
            turnId: cc.turnId,
            workingDirectory: cc.workingDirectory,
          };
          try {
            if (p?.case === "postModelResponse" && p.value.runPrompt) {
              await draftTurn(
                memory,
                roots(cc.workingDirectory),
                p.value.runPrompt,
                cc.sessionId,
                cc.turnId,
                new Date().toISOString(),
                async (d) =>
                  (await writeThroughKernel(via, AUTO_RECORDER, {
                    case: "record",
                    value: {
                      type: TYPE_NUMBER[d.type],
                      scope: SCOPE_NUMBER.project,
                      title: d.title,
                      content: textBlocks(d.content),
                      status: RecordStatus.PENDING,
                    },
                  })) !== undefined,
              );
            } else if (p?.case === "sessionEnd") {
              await reconcileSession(
                memory,
                roots(cc.workingDirectory),
                p.value.sessionId || cc.sessionId,
                async (id) =>
                  (await writeThroughKernel(via, AUTO_RECORDER, { case: "delete", value: { id } })) !==
                  undefined,
              );
            }
          } catch (err) {
            asStatus(err);
          }
        }
        return { outcome: { case: "observe", value: {} } };
      },
    }),
    toolService({
      tools: [rememberTool(host), forgetTool(host), searchTool(host)],
      config: CONFIG,
      configure: (values) => applyConfig(values),
    }),
  ],
});
