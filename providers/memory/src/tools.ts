// memory.remember / memory.forget (resource, moderate: they pass the plan/apply gate) and
// memory.search (data_source, read_only), served by the same process as the MemoryService
// and calling straight into its logic. remember decides create vs update by whether the id
// (given, or the title's slug) exists; before creating it looks for near matches of the same
// type and scope and, finding some, answers with them (a result, not an error) for the model
// to choose: re-invoke with the intended id, or with create_new.
import type { JsonObject } from "@bufbuild/protobuf";
import {
  r,
  s,
  type ToolContext,
  type ToolDefinition,
  ToolFailure,
  tokenCounter,
} from "@pluggableharness/tool-kit";
import { fromTool, SCOPE_NUMBER, TYPE_NUMBER, textBlocks, writeThroughKernel } from "./kernel-write.ts";
import { type Memory, MemoryFailure } from "./memory.ts";
import { SCOPES, type ScopeName, type StoredRecord, slugify, TYPES, type TypeName } from "./record.ts";
import type { Roots } from "./store.ts";

export interface ToolHost {
  memory(): Memory;
  roots(workingDirectory: string | undefined): Roots;
  now(): Date;
}

const DEFAULT_SCOPE: Record<TypeName, ScopeName> = {
  user: "global",
  feedback: "project",
  project: "project",
  reference: "project",
};

function failure(err: unknown): never {
  if (err instanceof MemoryFailure) {
    throw new ToolFailure(err.category === "not_found" ? "not_found" : "invalid_arguments", err.message);
  }
  throw err;
}

const brief = (rec: StoredRecord) => ({ id: rec.id, type: rec.type, scope: rec.scope, title: rec.title });

const outcome = s.object(
  {
    action: s.string("What happened.", ["created", "updated", "needs_confirmation", "forgotten"]),
    id: s.string("The record's id (empty when nothing was written)."),
    message: s.string("What to tell the model."),
    candidates: s.array(
      s.object(
        { id: s.string(), type: s.string(), scope: s.string(), title: s.string(), content: s.string() },
        ["id", "title"],
      ),
      "Existing records close to the one proposed (needs_confirmation only).",
    ),
  },
  ["action", "id", "message"],
);

interface RememberArgs {
  type: TypeName;
  scope?: ScopeName;
  id?: string;
  title: string;
  content: string;
  create_new?: boolean;
}

export function rememberTool(host: ToolHost): ToolDefinition<RememberArgs> {
  return {
    name: "remember",
    kind: "resource",
    risk: "moderate",
    description:
      "Save one short fact for later sessions. type: user (who the user is), feedback (how to work), project (work and decisions not evident from code or git) or reference (where information lives). Pass an existing id to update rather than duplicate; link records with [[id]]. Never store secrets.",
    input: s.object(
      {
        type: s.string(undefined, TYPES),
        scope: s.string("Default: global for user, else project.", SCOPES),
        id: s.string("Slug; default from the title."),
        title: s.string(),
        content: s.string(),
        create_new: s.boolean("Add even though similar records exist."),
      },
      ["type", "title", "content"],
    ),
    output: outcome,
    streaming: false,
    // Writes decide create-vs-update from what exists: one at a time per provider.
    concurrency: { safe: false },
    defaultTimeoutMs: 10_000,
    idempotent: true,
    modelText: { field: "message" },
    preview(args) {
      const scope = args.scope ?? DEFAULT_SCOPE[args.type];
      return r.group([
        r.text(`remember (${args.type}, ${scope}): ${args.title}`, "bold"),
        r.text(args.content),
      ]);
    },
    async invoke(args, ctx: ToolContext): Promise<JsonObject> {
      const memory = host.memory();
      const roots = host.roots(ctx.workingDirectory);
      const scope = args.scope ?? DEFAULT_SCOPE[args.type];
      const now = host.now().toISOString();
      try {
        const id = args.id ?? slugify(args.title);
        const existing = memory.store.get(roots, id);
        if (existing) {
          if (existing.type !== args.type || existing.scope !== scope) {
            throw new ToolFailure(
              "invalid_arguments",
              `"${id}" is a ${existing.type} record scoped ${existing.scope}; a record's type and scope never change: forget it and remember it anew, or choose another id`,
            );
          }
          const viaKernel = await writeThroughKernel(fromTool(ctx), "memory.remember", {
            case: "update",
            value: { id, title: args.title, content: textBlocks(args.content) },
          });
          if (!viaKernel) memory.update(roots, id, args.content, args.title, now);
          return { action: "updated", id, message: `Updated memory "${id}".` };
        }
        if (!args.create_new) {
          const near = memory.nearMatches(roots, args.type, scope, id, args.title);
          if (near.length > 0) {
            return {
              action: "needs_confirmation",
              id: "",
              message:
                `Nothing saved: similar ${args.type} records exist (${near.map((n) => `"${n.id}"`).join(", ")}). ` +
                "Call remember again with the id of the one you mean to update, or with create_new: true to add a separate record.",
              candidates: near.map((n) => ({ ...brief(n), content: n.content.slice(0, 400) })),
            };
          }
        }
        const viaKernel = await writeThroughKernel(fromTool(ctx), "memory.remember", {
          case: "record",
          value: {
            type: TYPE_NUMBER[args.type],
            scope: SCOPE_NUMBER[scope],
            ...(args.id !== undefined ? { id: args.id } : {}),
            title: args.title,
            content: textBlocks(args.content),
          },
        });
        const rec = viaKernel
          ? { id: viaKernel.id, type: args.type, scope }
          : memory.record(
              roots,
              {
                type: args.type,
                scope,
                ...(args.id !== undefined ? { id: args.id } : {}),
                title: args.title,
                content: args.content,
                provenance: {
                  sourceSessionId: ctx.sessionId ?? "",
                  ...(ctx.callContext?.turnId ? { sourceTurnId: ctx.callContext.turnId } : {}),
                  recordedBy: "memory.remember",
                },
              },
              now,
            );
        return {
          action: "created",
          id: rec.id,
          message: `Saved memory "${rec.id}" (${rec.type}, ${rec.scope}).${rec.id !== id ? ` "${id}" was taken, so it is "${rec.id}".` : ""}`,
        };
      } catch (err) {
        failure(err);
      }
    },
  };
}

export function forgetTool(host: ToolHost): ToolDefinition<{ id: string }> {
  return {
    name: "forget",
    kind: "resource",
    risk: "moderate",
    description: "Delete a saved memory record.",
    input: s.object({ id: s.string() }, ["id"]),
    output: outcome,
    streaming: false,
    concurrency: { safe: true, keyFields: ["id"] },
    defaultTimeoutMs: 10_000,
    idempotent: false,
    modelText: { field: "message" },
    preview(args, ctx) {
      const rec = host.memory().store.get(host.roots(ctx.workingDirectory), args.id);
      return rec
        ? r.group([
            r.text(`forget ${rec.id} (${rec.type}, ${rec.scope}): ${rec.title}`, "bold"),
            r.text(rec.content),
          ])
        : r.text(`forget ${args.id}: no such record`, "warning");
    },
    async invoke(args, ctx) {
      try {
        const viaKernel = await writeThroughKernel(fromTool(ctx), "memory.forget", {
          case: "delete",
          value: { id: args.id },
        });
        if (!viaKernel) host.memory().delete(host.roots(ctx.workingDirectory), args.id);
      } catch (err) {
        failure(err);
      }
      return { action: "forgotten", id: args.id, message: `Forgot memory "${args.id}".` };
    },
  };
}

interface SearchArgs {
  query: string;
  type?: TypeName;
  scope?: ScopeName;
  limit?: number;
}

const SEARCH_BUDGET_TOKENS = 8_000;

export function searchTool(host: ToolHost): ToolDefinition<SearchArgs> {
  return {
    name: "search",
    kind: "data_source",
    risk: "read_only",
    description: "Search saved memory records beyond those already in context.",
    input: s.object(
      {
        query: s.string(),
        type: s.string(undefined, TYPES),
        scope: s.string(undefined, SCOPES),
        limit: s.integer(),
      },
      ["query"],
    ),
    output: s.object(
      {
        results: s.array(
          s.object(
            {
              id: s.string(),
              type: s.string(),
              scope: s.string(),
              title: s.string(),
              content: s.string(),
              relevance: s.number("In [0, 1]."),
              updated_at: s.string(),
            },
            ["id", "type", "scope", "title", "content", "relevance"],
          ),
        ),
      },
      ["results"],
    ),
    streaming: false,
    concurrency: { safe: true },
    defaultTimeoutMs: 10_000,
    idempotent: true,
    async invoke(args, ctx) {
      if (args.query.trim() === "") throw new ToolFailure("invalid_arguments", "query is empty");
      const limit = Math.min(50, Math.max(1, args.limit ?? 10));
      const found = await host.memory().recall(
        host.roots(ctx.workingDirectory),
        {
          sessionId: ctx.sessionId ?? "",
          budget: SEARCH_BUDGET_TOKENS,
          query: args.query,
          filesTouched: [],
          types: args.type ? [args.type] : [],
          scopes: args.scope ? [args.scope] : [],
          includePending: false,
          limit,
          now: host.now().getTime(),
        },
        tokenCounter(ctx.kernel, undefined),
      );
      return {
        results: found.map((f) => ({
          ...brief(f.record),
          content: f.record.content,
          relevance: Math.round(f.score * 1000) / 1000,
          updated_at: f.record.updatedAt,
        })),
      };
    },
  };
}
