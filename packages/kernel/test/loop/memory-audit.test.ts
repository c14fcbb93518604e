// Memory the operator audits, against a third-party-style memory provider that stores
// exactly what it is given (no slug or link logic of its own): the kernel's write path
// gives it unique slugs and parsed [[links]]; the first-party commands provider (a real
// plugin process) runs /memory list, show, approve, reject and forget through
// ControlSession; approve, reject and forget become memory_update / memory_delete events
// in the session file, rendered with the record's [[references]] as link nodes; and a
// model cannot reach any of it.
import { fileURLToPath } from "node:url";
import { create, fromBinary } from "@bufbuild/protobuf";
import { StatusError } from "@pluggableharness/plugin-sdk";
import { MemoryMutationEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import {
  type MemoryRecord,
  MemoryRecordSchema,
  MemoryScope,
  MemoryService,
  MemoryType,
  RecordStatus,
} from "@pluggableharness/protocol/memory";
import type { RenderNode } from "@pluggableharness/protocol/render";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterAll, expect, it } from "vitest";
import { genericRenderTree } from "../../src/frontends/generic-render.ts";
import type { InProcessPluginFactory } from "../../src/index.ts";
import { Harness, reply, type TestClient } from "./harness.ts";

const COMMANDS = fileURLToPath(new URL("../../../../providers/commands", import.meta.url));
const h = new Harness();
afterAll(() => h.dispose());

const NOT_FOUND = 5;

/** A naive memory provider: a map, ids and links stored as the request gives them. */
function naiveMemory(store: Map<string, MemoryRecord>): InProcessPluginFactory {
  const missing = (id: string) => new StatusError(NOT_FOUND, `no record "${id}"`);
  const get = (id: string) => {
    const r = store.get(id);
    if (!r) throw missing(id);
    return r;
  };
  return () =>
    ({
      packageJson: { name: "naive-memory", version: "1.0.0", pluggableharness: { name: "naive-memory" } },
      services: [
        {
          service: MemoryService,
          implementation: {
            getCapabilities: () => ({
              capabilities: {
                defaultTokenBudget: 100n,
                supportedTypes: [MemoryType.PROJECT],
                supportedScopes: [MemoryScope.PROJECT],
                ratificationSupported: true,
                configSchema: { attributes: [] },
              },
            }),
            configure: () => ({ result: {} }),
            recall: () => ({ records: [] }),
            record: (req: MemoryRecord & { id?: string }) => {
              const id = req.id ?? "unnamed";
              store.set(
                id,
                create(MemoryRecordSchema, {
                  id,
                  type: req.type,
                  scope: req.scope,
                  title: req.title,
                  content: req.content,
                  links: req.links,
                  status: RecordStatus.CANONICAL,
                }),
              );
              return { result: { id, status: RecordStatus.CANONICAL } };
            },
            updateRecord: (req: { id: string; content: MemoryRecord["content"]; links: string[] }) => {
              const r = get(req.id);
              store.set(req.id, create(MemoryRecordSchema, { ...r, content: req.content, links: req.links }));
              return { result: { id: req.id, status: RecordStatus.CANONICAL } };
            },
            deleteRecord: (req: { id: string }) => {
              get(req.id);
              store.delete(req.id);
              return { result: { deleted: true } };
            },
            listRecords: () => ({ records: [...store.values()], nextPageToken: "" }),
            getRecord: (req: { id: string }) => ({ record: get(req.id) }),
            approveRecord: (req: { id: string }) => {
              const r = get(req.id);
              store.set(req.id, create(MemoryRecordSchema, { ...r, status: RecordStatus.CANONICAL }));
              return { result: { id: req.id, status: RecordStatus.CANONICAL } };
            },
            rejectRecord: (req: { id: string }) => {
              get(req.id);
              store.delete(req.id);
              return { result: { deleted: true } };
            },
            render: () => ({}),
          },
        },
      ],
    }) as ReturnType<InProcessPluginFactory>;
}

const draft = (id: string, text: string) =>
  create(MemoryRecordSchema, {
    id,
    type: MemoryType.PROJECT,
    scope: MemoryScope.PROJECT,
    title: id,
    content: [{ block: { case: "text", value: { text } } }],
    status: RecordStatus.PENDING,
  });

async function slash(c: TestClient, id: string, args: string): Promise<void> {
  const from = c.events.length;
  c.send({ sessionId: id, event: { case: "slashCommand", value: { name: "memory", args } } });
  expect(await c.finished(id, from)).toBe(SessionStatus.COMPLETED);
}

/** Every text and link of a render node, in order. */
function flat(n: RenderNode | undefined): (string | { link: string; url: string })[] {
  if (!n) return [];
  const v = n.node;
  if (v.case === "text") return [v.value.content];
  if (v.case === "link") return [{ link: v.value.text, url: v.value.url }];
  if (v.case === "group") return v.value.children.flatMap(flat);
  return [];
}

it("gives a third-party memory provider unique slugs and parsed [[links]] on the kernel's write path", async () => {
  const store = new Map<string, MemoryRecord>();
  const k = await h.kernel({
    providers: [{ name: "naive", fixture: "memory", factory: naiveMemory(store) }],
  });
  const call = { workingDirectory: k.projectDir };
  const first = await k.kernel.memory.record(call, "naive", {
    type: MemoryType.PROJECT,
    scope: MemoryScope.PROJECT,
    title: "User Role!",
    content: "The operator is the release manager; see [[Release Day]] and [[release-day]].",
    recordedBy: "test",
  });
  const second = await k.kernel.memory.record(call, "naive", {
    type: MemoryType.PROJECT,
    scope: MemoryScope.PROJECT,
    title: "user role",
    content: "Also on call, [[pager-duty]].",
    recordedBy: "test",
  });
  const third = await k.kernel.memory.record(call, "naive", {
    type: MemoryType.PROJECT,
    scope: MemoryScope.PROJECT,
    id: "user-role",
    title: "again",
    content: "plain",
    recordedBy: "test",
  });
  expect([first.record.id, second.record.id, third.record.id]).toEqual([
    "user-role",
    "user-role-2",
    "user-role-3",
  ]);
  expect(store.get("user-role")!.links).toEqual(["release-day"]);
  expect(store.get("user-role-2")!.links).toEqual(["pager-duty"]);
  const updated = await k.kernel.memory.update(call, "naive", "user-role-3", "Now see [[user-role]].");
  expect(updated.record.links).toEqual(["user-role"]);
  // Shown, each reference is a link node to the record it names (dangling ones too).
  expect(flat(first.content)).toEqual([
    "The operator is the release manager; see ",
    { link: "Release Day", url: "memory:release-day" },
    " and ",
    { link: "release-day", url: "memory:release-day" },
    ".",
  ]);
  await k.close();
});

it("runs /memory list, show, approve, reject and forget for the operator and records each change in the session", async () => {
  const store = new Map<string, MemoryRecord>([
    ["commit-language", draft("commit-language", "Write commit messages in English, see [[style-guide]].")],
    ["tabs", draft("tabs", "Indent with tabs.")],
    [
      "old-fact",
      create(MemoryRecordSchema, { ...draft("old-fact", "Obsolete."), status: RecordStatus.CANONICAL }),
    ],
  ]);
  const k = await h.kernel({
    providers: [
      { name: "commands", fixture: "installed", firstParty: "commands" },
      { name: "naive", fixture: "memory", factory: naiveMemory(store) },
    ],
    install: { commands: COMMANDS },
    hcl: `
agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
  tools = ["tools.*", "commands.*"]
}`,
  });
  k.script("m", { turns: [reply("hello")] });
  const c = k.client();
  const id = await c.create("[m] start");
  expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
  // The model is never offered /memory's tool.
  const offered = ((k.requests("m").at(-1)!.request.tools ?? []) as { name: string }[]).map((t) => t.name);
  expect(offered.some((n) => n.includes("memory"))).toBe(false);

  await slash(c, id, "list");
  await slash(c, id, "show commit-language");
  await slash(c, id, "approve commit-language");
  await slash(c, id, "reject tabs");
  await slash(c, id, "forget old-fact");
  expect([...store.keys()]).toEqual(["commit-language"]);
  expect(store.get("commit-language")!.status).toBe(RecordStatus.CANONICAL);

  const changes = k
    .file(id)
    .events.filter((e) => e.kind === EventKind.MEMORY_UPDATE || e.kind === EventKind.MEMORY_DELETE);
  expect(
    changes.map((e) => {
      const m = fromBinary(MemoryMutationEventSchema, e.payload);
      return [e.kind, m.record?.id, m.record?.status, m.provider, m.origin, e.producer.name];
    }),
  ).toEqual([
    [EventKind.MEMORY_UPDATE, "commit-language", RecordStatus.CANONICAL, "naive", "/memory", "kernel"],
    [EventKind.MEMORY_DELETE, "tabs", RecordStatus.PENDING, "naive", "/memory", "kernel"],
    [EventKind.MEMORY_DELETE, "old-fact", RecordStatus.CANONICAL, "naive", "/memory", "kernel"],
  ]);
  // The approval renders with the record's reference as a link node.
  const tree = genericRenderTree(k.file(id).events.find((e) => e.kind === EventKind.MEMORY_UPDATE)!);
  const shown = tree.root?.node.case === "group" ? tree.root.node.value.children : [];
  expect(flat(shown[0])).toEqual([
    'Memory approved (/memory): "commit-language" — commit-language [project, project]',
  ]);
  expect(flat(shown[1])).toContainEqual({ link: "style-guide", url: "memory:style-guide" });

  // What the operator saw: show's result carries the record's text with the link node.
  const rendered = JSON.stringify(c.events, (_k, v) => (typeof v === "bigint" ? String(v) : v));
  expect(rendered).toContain("memory:style-guide");
  expect(rendered).toContain("Approved memory");
  await k.close();
});
