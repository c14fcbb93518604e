// `agent sessions replay`: a session's events re-rendered by the builds that produced
// them, through the kernel's ordinary attach path (session_attached, one render per event,
// backfill_complete), so the output is what a frontend attaching to the session sees.
// Before anything is launched or rendered, the producers the session recorded are
// compared with what this project installs; a producer it installs at another version is
// rendered by the exact build from the download cache (replay-builds.ts), and only one no
// cached build serves is reported, with how to get it back, and the replay does not start.
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
import { readProducers } from "@pluggableharness/registry";
import { PluginHost } from "@pluggableharness/runtime";
import type { ProducerIdentity, ProducerRecord } from "@pluggableharness/state";
import { EXIT } from "../exit-codes.ts";
import { installationRoot } from "../inspect.ts";
import { resolveProject } from "../install.ts";
import { CliError, CoalescingWriter, type Io } from "../io.ts";
import { projectOf } from "../project.ts";
import { cachedBuildsFor, howToGet, originOf, producerKey, type ReplayBuild } from "../replay-builds.ts";
import { resolveSessionId } from "../session-ids.ts";
import { configFailure } from "./kernel-start.ts";
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
 * first-party packages (their Describe answers come from package.json) or forge builds the
 * kernel already ran (producers.json in the cache). Anything else is asked.
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
      const recorded = r.installDir ? readProducers(r.installDir) : undefined;
      if (recorded) {
        for (const p of recorded) own.push({ category: p.category, name: p.name, version: p.version });
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

function describeMissing(
  missing: readonly ProducerRecord[],
  how: (p: ProducerRecord) => string,
  refused: ReadonlyMap<string, string>,
): string {
  return missing
    .map((p) => {
      const why = refused.get(producerKey(p));
      return (
        `  ${p.categoryText} ${p.name} ${p.version} (first used at event ${p.firstSeenSequence}): ` +
        `${why ? `its cached build is unusable: ${why}` : "no cached build"}\n${how(p)}`
      );
    })
    .join("\n");
}

export async function runReplay(
  io: Io,
  typed: string,
  opts: { expand?: boolean; verbose?: boolean; children?: boolean },
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
  // Cached builds of versions the project no longer installs, added as their session needs them.
  const builds = new Map<string, ReplayBuild>();
  const producing = () => {
    const all = new Map<string, readonly ProducerIdentity[]>(installed);
    for (const b of builds.values()) all.set(b.provider.localName, b.producers);
    return all;
  };
  let exclude: string[] | undefined;
  const damage = new Map<string, string[]>();
  for (const sid of [rootId, ...tree.map((t) => t.info.sessionId)]) {
    const reader = openReader(sid);
    try {
      // What is damaged is reported after the replay shows everything else.
      const problems = eventProblems(reader);
      const cached = cachedBuildsFor(reader.missingProducers([...producing().values()].flat()), io.env);
      for (const b of cached.builds) builds.set(b.provider.localName, b);
      if (cached.missing.length > 0) {
        const how = (p: ProducerRecord) => howToGet(p, originOf(p, installed, resolved, io.env));
        throw new CliError(
          `agent: cannot replay session ${sid}: no build of these producers is installed or cached:\n${describeMissing(cached.missing, how, cached.refused)}\n` +
            "`agent sessions show` prints the session with the kernel's generic rendering meanwhile.",
          EXIT.ERROR,
        );
      }
      // A provider stays out only when no session of the tree needs it.
      const notNeeded = providersNotNeeded(reader.producers(), producing());
      exclude = exclude === undefined ? notNeeded : exclude.filter((n) => notNeeded.includes(n));
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
      replayBuilds: [...builds.values()].map((b) => b.provider),
      // Replay never exports: trace and span ids are not the session's to reproduce.
      telemetry: false,
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
  opts: { expand?: boolean; verbose?: boolean },
): Promise<void> {
  // Context contributions only with --verbose, as a live run shows them.
  const conn = kernel.frontends.connect({ name: "replay", interactive: false, verbose: !!opts.verbose });
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
