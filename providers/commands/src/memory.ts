// /memory: the operator's audit of what the memory providers hold, inside a session.
// `/memory` (or `/memory list`) lists the records, drafts awaiting approval first;
// `/memory pending` only the drafts; `/memory show <id>` one record, its [[references]]
// as links; `/memory approve <id>` puts a draft in use, `/memory reject <id>` discards it,
// `/memory forget <id>` deletes a record. `provider=<name>` picks one memory provider.
// The kernel does the work (ControlSession's memory operation, which only an operator's
// own command reaches) and records approve, reject and forget in the session.
import { fromJson, type JsonObject, type JsonValue, toJson } from "@bufbuild/protobuf";
import { MemoryAuditAction, type MemoryAuditEntry } from "@pluggableharness/protocol/kernel";
import { MemoryScope, MemoryType, RecordStatus } from "@pluggableharness/protocol/memory";
import { RenderNodeSchema } from "@pluggableharness/protocol/render";
import { r, s, type ToolDefinition, ToolFailure } from "@pluggableharness/tool-kit";
import { common, control } from "./tools.ts";

const ACTIONS: Record<string, MemoryAuditAction> = {
  list: MemoryAuditAction.LIST,
  pending: MemoryAuditAction.LIST,
  show: MemoryAuditAction.SHOW,
  approve: MemoryAuditAction.APPROVE,
  reject: MemoryAuditAction.REJECT,
  forget: MemoryAuditAction.FORGET,
};

const USAGE =
  "write /memory [list|pending], /memory show <id>, /memory approve <id>, /memory reject <id> or /memory forget <id> (add provider=<name> to pick a memory provider)";

const lower = (s: string | undefined) => (s ?? "unspecified").toLowerCase();

function brief(e: MemoryAuditEntry): JsonObject {
  const rec = e.record;
  return {
    provider: e.provider,
    id: rec?.id ?? "",
    type: lower(MemoryType[rec?.type ?? 0]),
    scope: lower(MemoryScope[rec?.scope ?? 0]),
    status: rec?.status === RecordStatus.PENDING ? "pending" : "canonical",
    title: rec?.title ?? "",
  };
}

const recordText = (e: MemoryAuditEntry) =>
  (e.record?.content ?? []).map((b) => (b.block.case === "text" ? b.block.value.text : "")).join("\n");

export const memoryTool: ToolDefinition<{ args?: string }> = {
  ...common,
  name: "memory",
  description:
    "Audit memory: list the records (drafts awaiting approval first), show one, approve or reject a draft, forget a record.",
  input: s.object({
    args: s.string("list | pending | show <id> | approve <id> | reject <id> | forget <id>"),
  }),
  output: s.object(
    {
      text: s.string(),
      state: s.string("What this call did.", ["list", "show", "approve", "reject", "forget"]),
      records: s.array(
        s.object(
          {
            provider: s.string(),
            id: s.string(),
            type: s.string(),
            scope: s.string(),
            status: s.string(),
            title: s.string(),
          },
          ["provider", "id", "type", "scope", "status", "title"],
        ),
      ),
      content: s.object({}, [], "The record's text as render nodes, [[references]] as links (show)."),
    },
    ["text", "state", "records"],
  ),
  idempotent: false,
  async invoke(args, ctx): Promise<JsonObject> {
    const words = (args.args ?? "").trim().split(/\s+/).filter(Boolean);
    const provider = words.find((w) => w.startsWith("provider="))?.slice("provider=".length) ?? "";
    const rest = words.filter((w) => !w.startsWith("provider="));
    const verb = (rest[0] ?? "list").toLowerCase();
    const action = ACTIONS[verb];
    const id = rest[1] ?? "";
    if (action === undefined || rest.length > 2 || (action !== MemoryAuditAction.LIST && !id))
      throw new ToolFailure("invalid_arguments", USAGE);
    const res = await control(ctx, {
      case: "memory",
      value: { action, id, provider, pendingOnly: verb === "pending" },
    });
    if (res.case !== "memory")
      throw new ToolFailure("execution_failed", "the kernel did not answer for memory");
    const entries = res.value.entries;
    const state = verb === "pending" ? "list" : verb;
    const out: JsonObject = { text: res.value.summary, state, records: entries.map(brief) };
    if (verb === "show" && entries[0]) {
      out["text"] = `${res.value.summary}\n\n${recordText(entries[0])}`;
      if (entries[0].content) out["content"] = toJson(RenderNodeSchema, entries[0].content) as JsonValue;
    }
    return out;
  },
  render(input) {
    if (input.kind !== "tool_result" || !input.payload) return undefined;
    const p = input.payload as { text: string; state: string; records?: JsonObject[]; content?: JsonValue };
    if (p.state === "show" && p.content) {
      return r.group([r.text(p.text.split("\n")[0] ?? "", "bold"), fromJson(RenderNodeSchema, p.content)]);
    }
    if (p.state === "list") {
      const lines = p.text.split("\n");
      return r.group([
        r.text(lines[0] ?? "", "bold"),
        ...(lines.length > 1 ? [r.list(lines.slice(1).map((l) => r.text(l)))] : []),
        ...(lines.length > 1
          ? [r.text("/memory show <id> reads one; approve <id> or reject <id> settles a draft.", "dim")]
          : []),
      ]);
    }
    return r.text(p.text, "success");
  },
};
