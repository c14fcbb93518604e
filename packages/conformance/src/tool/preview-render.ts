// Preview must not change anything; Render must answer (or decline) without failing
// on payloads the plugin emitted and survive payloads it did not.
import { createHash } from "node:crypto";
import { lstat, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { create, type JsonObject, toBinary } from "@bufbuild/protobuf";
import { ToolResultEventSchema } from "@pluggableharness/protocol/event";
import { type GetSchemaResponse, ToolService } from "@pluggableharness/protocol/tool";
import type { CheckContext } from "../runner.ts";
import { sampleArguments } from "./args.ts";
import { type CapturedResult, nextCallId, SESSION_ID } from "./calls.ts";

const SNAPSHOT_LIMIT = 20_000;

/** Path -> type, size, mtime and content hash of everything under `dir`. */
export async function snapshot(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (d: string): Promise<void> => {
    let entries: string[];
    try {
      entries = await readdir(d);
    } catch {
      return;
    }
    for (const name of entries) {
      if (out.size >= SNAPSHOT_LIMIT) return;
      const p = join(d, name);
      const st = await lstat(p).catch(() => undefined);
      if (!st) continue;
      if (st.isDirectory()) {
        out.set(p, `dir ${st.mode}`);
        await walk(p);
      } else if (st.isFile()) {
        const hash =
          st.size < 4 * 1024 * 1024
            ? createHash("sha256")
                .update(await readFile(p))
                .digest("hex")
            : "";
        out.set(p, `file ${st.size} ${st.mtimeMs} ${st.mode} ${hash}`);
      } else {
        out.set(p, `other ${st.mode}`);
      }
    }
  };
  await walk(dir);
  return out;
}

function differences(a: Map<string, string>, b: Map<string, string>): string[] {
  const diff: string[] = [];
  for (const [k, v] of a) if (b.get(k) !== v) diff.push(b.has(k) ? `changed ${k}` : `removed ${k}`);
  for (const k of b.keys()) if (!a.has(k)) diff.push(`created ${k}`);
  return diff;
}

/** Status codes a Preview may answer for arguments that do not fit the current state. */
const DECLINE_CODES = new Set([3, 5, 7, 9]);

/**
 * Calls Preview for one call and checks that nothing under the working directory
 * changed. With `mustPreview` (a sample expected to succeed) a declining status fails.
 */
export async function checkPreviewOnce(
  ctx: CheckContext,
  id: string,
  name: string,
  args: JsonObject,
  mustPreview: boolean,
): Promise<void> {
  const client = ctx.host.client(ToolService);
  const before = await snapshot(ctx.workingDirectory);
  let problem = "";
  let note = "";
  try {
    const res = await client.preview({
      call: {
        id: nextCallId(),
        toolName: name,
        arguments: args,
        callContext: { sessionId: SESSION_ID, workingDirectory: ctx.workingDirectory },
      },
    });
    if (res.preview && !res.preview.root?.node.case) problem = "the preview tree has no root node";
    note = res.preview ? `preview root: ${res.preview.root?.node.case}` : "no preview for this call";
  } catch (err) {
    const code = (err as { code?: number }).code;
    if (mustPreview || code === undefined || !DECLINE_CODES.has(code)) {
      problem = `Preview failed: ${(err as Error).message}`;
    } else {
      note = `declined with status ${code}`;
    }
  }
  const changed = differences(before, await snapshot(ctx.workingDirectory));
  if (changed.length) problem = `Preview changed the working directory: ${changed.slice(0, 5).join(", ")}`;
  ctx.record(id, problem ? "fail" : "pass", problem || `${note}; nothing changed on disk`);
}

/** Preview for advertised operations no sample exercised, with synthesised arguments. */
export async function checkPreview(ctx: CheckContext, response: GetSchemaResponse): Promise<void> {
  if (response.previewSupported.length === 0) {
    ctx.record("tool.preview", "skip", "no operation advertises Preview");
    return;
  }
  for (const name of response.previewSupported) {
    const schema = response.tools.find((t) => t.name === name);
    if (!schema || ctx.samples.some((s) => s.tool === name && !s.cancel)) continue;
    await checkPreviewOnce(
      ctx,
      `tool.preview.${name}.synthesized`,
      name,
      sampleArguments(schema.inputSchema),
      false,
    );
  }
}

export async function checkRender(ctx: CheckContext, captured: readonly CapturedResult[]): Promise<void> {
  const client = ctx.host.client(ToolService);
  const unimplemented = (err: unknown) => (err as { code?: number }).code === 12;
  try {
    await client.render({
      kind: "tool_result",
      payload: new Uint8Array([0xff, 0xff, 0xff, 0x07]),
      schemaVersion: "1",
    });
  } catch (err) {
    if (unimplemented(err)) {
      ctx.record(
        "tool.render",
        "skip",
        "Render is not implemented (the kernel falls back to generic rendering)",
      );
      return;
    }
  }
  const alive = await client.getSchema({}, { timeoutMs: 2_000 }).then(
    () => true,
    () => false,
  );
  ctx.record(
    "tool.render.garbage-payload",
    alive ? "pass" : "fail",
    alive
      ? "an undecodable payload did not take the plugin down"
      : "the plugin stopped answering after Render got garbage",
  );
  const seen = new Set<string>();
  for (const c of captured) {
    if (seen.has(c.tool)) continue;
    seen.add(c.tool);
    const event = create(ToolResultEventSchema, {
      turnId: "01CONFORMANCETURN000000000",
      provider: "conformance",
      toolCallId: nextCallId(),
      toolName: c.tool,
      outcome: { case: "result", value: { payload: c.payload } },
      output: c.run.events.flatMap((e) => (e.event.case === "outputChunk" ? [e.event.value] : [])),
      ...(c.run.outcome?.exitStatus ? { exitStatus: c.run.outcome.exitStatus } : {}),
    });
    try {
      const res = await client.render({
        kind: "tool_result",
        payload: toBinary(ToolResultEventSchema, event),
        schemaVersion: "1",
      });
      const ok = !res.tree || !!res.tree.root?.node.case;
      ctx.record(
        `tool.render.${c.tool}`,
        ok ? "pass" : "fail",
        ok
          ? res.tree
            ? `root: ${res.tree.root?.node.case}`
            : "declined (generic rendering)"
          : "a tree without a root node",
      );
    } catch (err) {
      ctx.record(
        `tool.render.${c.tool}`,
        "fail",
        `Render failed on a result the plugin produced: ${(err as Error).message}`,
      );
    }
  }
}
