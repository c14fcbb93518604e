// `agent sessions replay`: a session's events re-rendered by the builds that produced
// them, through the kernel's ordinary attach path (session_attached, one render per event,
// backfill_complete), so the output is what a frontend attaching to the session sees.
// Before anything is launched or rendered, the producers the session recorded are
// compared with what this project installs; any that is missing is reported and the
// replay does not start.
import { join } from "node:path";
import {
  ConfigError,
  loadGlobalConfig,
  loadProjectConfig,
  type ResolvedProvider,
} from "@pluggableharness/config";
import { createKernel } from "@pluggableharness/kernel";
import { producerFor, readPackageMetadata } from "@pluggableharness/plugin-sdk";
import { PluginCategory } from "@pluggableharness/protocol/common";
import { treeText } from "@pluggableharness/provider-tui/render-tree";
import { PluginHost } from "@pluggableharness/runtime";
import type { ProducerIdentity, ProducerRecord } from "@pluggableharness/state";
import { EXIT } from "../exit-codes.ts";
import { installationRoot } from "../inspect.ts";
import { resolveProject } from "../install.ts";
import { CliError, CoalescingWriter, type Io } from "../io.ts";
import { projectOf } from "../project.ts";
import { resolveSessionId } from "../session-ids.ts";
import { configFailure } from "./run.ts";
import { damageOf, descendantsOf, eventProblems, openReader, reportDamage, subagentHeading } from "./show.ts";

const CATEGORIES = [
  PluginCategory.MODEL,
  PluginCategory.TOOL,
  PluginCategory.CONTEXT,
  PluginCategory.MEMORY,
  PluginCategory.FRONTEND,
  PluginCategory.WIDGET,
];

/**
 * What this project would run, as producer identities, known without launching
 * first-party packages (their Describe answers come from package.json). Dev
 * overrides have no package to read, so they are asked.
 */
async function installedProducers(
  resolved: readonly ResolvedProvider[],
  cwd: string,
): Promise<Map<string, ProducerIdentity[]>> {
  const out = new Map<string, ProducerIdentity[]>();
  await Promise.all(
    resolved.map(async (r) => {
      const own: ProducerIdentity[] = [];
      out.set(r.localName, own);
      if (r.packageDir) {
        const meta = readPackageMetadata(join(r.packageDir, "package.json"));
        for (const category of CATEGORIES) {
          const p = producerFor(meta, category, 1);
          own.push({ category, name: p.name, version: p.version });
        }
        return;
      }
      const host = new PluginHost({ name: r.localName, command: r.executable, cwd });
      try {
        const d = await host.describe();
        for (const p of Object.values(d.producers))
          own.push({ category: p.category, name: p.name, version: p.version });
      } catch {
        // not installed in a usable way: its producers count as missing
      } finally {
        await host.shutdown().catch(() => {});
      }
    }),
  );
  return out;
}

const producerKey = (p: ProducerIdentity) => `${p.category}\u0000${p.name}\u0000${p.version}`;

/** The categories whose events the kernel's renderer sends to their producer's Render. */
const RENDERING_CATEGORIES = new Set([
  PluginCategory.MODEL,
  PluginCategory.TOOL,
  PluginCategory.CONTEXT,
  PluginCategory.MEMORY,
]);

/**
 * The providers a replay has no use for: those that produced none of the session's events
 * in a category the renderer asks to Render. Only the rest are loaded (a session written
 * by the kernel and one tool provider starts that one plugin, not the whole profile).
 */
export function providersNotNeeded(
  recorded: readonly ProducerIdentity[],
  installed: ReadonlyMap<string, readonly ProducerIdentity[]>,
): string[] {
  const wanted = new Set(recorded.filter((p) => RENDERING_CATEGORIES.has(p.category)).map(producerKey));
  return [...installed]
    .filter(([, producers]) => !producers.some((p) => wanted.has(producerKey(p))))
    .map(([name]) => name);
}

function describeMissing(missing: readonly ProducerRecord[]): string {
  return missing
    .map((p) => `  ${p.categoryText} ${p.name} ${p.version} (first used at event ${p.firstSeenSequence})`)
    .join("\n");
}

export async function runReplay(
  io: Io,
  typed: string,
  opts: { expand?: boolean; children?: boolean },
): Promise<number> {
  const id = resolveSessionId(typed);
  const projectDir = projectOf(io).dir;
  const loaded = loadProjectConfig(projectDir, { env: io.env });
  if (!loaded.ok) throw configFailure(loaded.diagnostics);
  const global = loadGlobalConfig({ env: io.env });
  if (!global.ok) throw configFailure(global.diagnostics);
  const { resolved, diagnostics } = await resolveProject(io, projectDir, loaded.config, { mode: "use" });
  if (diagnostics.some((d) => d.severity === "error")) throw configFailure(diagnostics);

  // 1. The check, before anything is rendered or launched for the replay: the session
  // and each of its sub-agents (replayed after it, in spawn order).
  const first = openReader(id);
  const rootId = first.sessionId;
  first.close();
  const tree = opts.children === false ? [] : descendantsOf(rootId);
  const installed = await installedProducers(resolved, projectDir);
  let exclude: string[] | undefined;
  const damage = new Map<string, string[]>();
  for (const sid of [rootId, ...tree.map((t) => t.info.sessionId)]) {
    const reader = openReader(sid);
    try {
      // What is damaged is reported after the replay shows everything else.
      const problems = eventProblems(reader);
      const missing = reader.missingProducers([...installed.values()].flat());
      // A provider stays out only when no session of the tree needs it.
      const notNeeded = providersNotNeeded(reader.producers(), installed);
      exclude = exclude === undefined ? notNeeded : exclude.filter((n) => notNeeded.includes(n));
      if (missing.length > 0) {
        throw new CliError(
          `agent: cannot replay session ${sid}: it was written by plugins this project does not install:\n${describeMissing(missing)}\n` +
            "Install those versions (required_providers in agent.hcl), or use `agent sessions show` for the kernel's generic rendering.",
          EXIT.ERROR,
        );
      }
      damage.set(sid, damageOf(reader, problems));
    } finally {
      reader.close();
    }
  }

  // 2. Re-render through the kernel's attach path.
  let kernel: Awaited<ReturnType<typeof createKernel>>;
  try {
    kernel = await createKernel({
      projectDir,
      installationRoot: installationRoot(),
      env: io.env,
      config: loaded.config,
      exclude: exclude ?? [],
    });
  } catch (err) {
    if (err instanceof ConfigError) throw configFailure(err.diagnostics);
    throw new CliError(`agent: ${(err as Error).message}`, EXIT.ERROR);
  }
  const out = new CoalescingWriter(io.out);
  try {
    let code: number = EXIT.OK;
    for (const [i, sid] of [rootId, ...tree.map((t) => t.info.sessionId)].entries()) {
      if (i > 0) out.write(`\n${subagentHeading(tree[i - 1]!.info, tree[i - 1]!.level)}\n\n`);
      await replayOne(kernel, sid, out, opts);
      code = Math.max(code, reportDamage(io, sid, damage.get(sid) ?? []));
    }
    out.close();
    return code;
  } finally {
    out.close();
    await kernel.shutdown().catch(() => {});
  }
}

async function replayOne(
  kernel: Awaited<ReturnType<typeof createKernel>>,
  id: string,
  out: CoalescingWriter,
  opts: { expand?: boolean },
): Promise<void> {
  const conn = kernel.frontends.connect({ name: "replay", interactive: false });
  try {
    conn.send({ event: { case: "attachSession", value: { requestId: "replay", sessionId: id } } });
    let n = 0;
    for await (const ev of conn.events) {
      const e = ev.event;
      if (e.case === "error")
        throw new CliError(`agent: ${e.value.error?.message ?? "replay failed"}`, EXIT.ERROR);
      if (e.case === "render") {
        out.write(`${n++ > 0 ? "\n" : ""}${treeText(e.value.content?.content, { expand: !!opts.expand })}\n`);
      }
      if (e.case === "backfillComplete") break;
    }
    out.flushNow();
  } finally {
    conn.close();
  }
}
