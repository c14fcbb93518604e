// `agent memory list | show | approve | reject | forget`: the operator's audit of what the
// project's memory providers hold, without a model. The kernel starts with the project's
// configuration and the operations go through its memory path (kernel/src/memory/audit.ts),
// the same one /memory uses inside a session: drafts listed first, approve makes a pending
// draft part of recall, reject discards a draft, forget deletes any record. The model has
// no way to these operations (its memory.forget tool passes the plan/apply gate).

import { create } from "@bufbuild/protobuf";
import { type ConfigDiagnostic, ConfigError, loadProjectConfig } from "@pluggableharness/config";
import {
  createKernel,
  entryLine,
  type Kernel,
  MemoryAuditError,
  type MemoryEntry,
  recordText,
} from "@pluggableharness/kernel";
import { MemoryScope, MemoryType, RecordStatus } from "@pluggableharness/protocol/memory";
import { RenderTreeSchema } from "@pluggableharness/protocol/render";
import { treeText } from "@pluggableharness/provider-tui/render-tree";
import { EXIT } from "../exit-codes.ts";
import { installationRoot } from "../inspect.ts";
import { CliError, type Io, line } from "../io.ts";
import { projectOf } from "../project.ts";
import { configFailure, inProcessFrontends } from "./kernel-start.ts";

export type MemoryAction = "list" | "show" | "approve" | "reject" | "forget";

export interface MemoryOptions {
  provider?: string;
  pending?: boolean;
  json?: boolean;
}

const lower = (s: string | undefined) => (s ?? "unspecified").toLowerCase();

function asJson(e: MemoryEntry) {
  const r = e.record;
  return {
    provider: e.provider,
    id: r.id,
    type: lower(MemoryType[r.type]),
    scope: lower(MemoryScope[r.scope]),
    status: r.status === RecordStatus.PENDING ? "pending" : "canonical",
    title: r.title,
    content: recordText(r),
    links: r.links,
    recorded_by: r.provenance?.recordedBy ?? "",
    source_session_id: r.provenance?.sourceSessionId ?? "",
  };
}

function showEntry(io: Io, e: MemoryEntry): void {
  const r = e.record;
  line(io.out, entryLine(e, true));
  const by = r.provenance?.recordedBy;
  const from = r.provenance?.sourceSessionId;
  if (by || from) line(io.out, `recorded by ${by || "?"}${from ? ` in session ${from}` : ""}`);
  if (r.links.length > 0) line(io.out, `links: ${r.links.join(", ")}`);
  line(io.out);
  line(io.out, treeText(create(RenderTreeSchema, { root: e.content })));
}

/** The variables a configuration failure says are unset, if that is all it says. */
function onlyUnset(diagnostics: readonly ConfigDiagnostic[]): string[] | undefined {
  const errors = diagnostics.filter((d) => d.severity === "error");
  const names = errors.map((d) =>
    d.category === "env_unset" ? /environment variable "([^"]+)"/.exec(d.detail)?.[1] : undefined,
  );
  return errors.length > 0 && names.every((n) => n) ? (names as string[]) : undefined;
}

/**
 * A kernel for the project. A vendor key missing from the environment does not stop an
 * audit, which calls no model: such variables read as empty the second time, and a
 * provider that then fails to start is left out. Any other configuration error is
 * reported as usual.
 */
async function start(io: Io): Promise<Kernel> {
  const projectDir = projectOf(io).dir;
  const loaded = loadProjectConfig(projectDir, { env: io.env });
  if (!loaded.ok) throw configFailure(loaded.diagnostics);
  const open = (env: NodeJS.ProcessEnv) =>
    createKernel({
      projectDir,
      installationRoot: installationRoot(),
      env,
      config: loaded.config,
      exclude: inProcessFrontends(loaded.config),
      // A provider that cannot start (a model provider without its key) must not stop an
      // audit that never calls it; a memory provider that failed is reported below.
      tolerateProviderFailures: true,
    });
  try {
    try {
      return await open(io.env);
    } catch (err) {
      const unset = err instanceof ConfigError ? onlyUnset(err.diagnostics) : undefined;
      if (!unset) throw err;
      return await open({ ...io.env, ...Object.fromEntries(unset.map((v) => [v, ""])) });
    }
  } catch (err) {
    if (err instanceof ConfigError) throw configFailure(err.diagnostics);
    throw new CliError(`agent: ${(err as Error).message}`, EXIT.ERROR);
  }
}

export async function runMemory(
  io: Io,
  action: MemoryAction,
  id: string | undefined,
  opts: MemoryOptions,
): Promise<number> {
  if (action !== "list" && !id) throw new CliError(`agent: memory ${action} needs a record id`, EXIT.USAGE);
  const kernel = await start(io);
  const call = { workingDirectory: io.cwd };
  try {
    const memory = kernel.memory;
    switch (action) {
      case "list": {
        const entries = await memory.list(call, {
          ...(opts.provider ? { provider: opts.provider } : {}),
          pendingOnly: !!opts.pending,
        });
        if (opts.json) {
          line(io.out, JSON.stringify(entries.map(asJson), null, 2));
          return EXIT.OK;
        }
        if (entries.length === 0) {
          line(io.out, opts.pending ? "No memory drafts await approval." : "Memory holds no records.");
          return EXIT.OK;
        }
        for (const e of entries) line(io.out, entryLine(e, true));
        const pending = entries.filter((e) => e.record.status === RecordStatus.PENDING).length;
        if (pending > 0)
          line(
            io.err,
            `${pending} pending: agent memory approve <id> puts one in use, reject <id> discards it.`,
          );
        return EXIT.OK;
      }
      case "show": {
        const e = await memory.show(call, id!, opts.provider);
        if (opts.json) line(io.out, JSON.stringify(asJson(e), null, 2));
        else showEntry(io, e);
        return EXIT.OK;
      }
      case "approve": {
        const e = await memory.approve(call, id!, opts.provider);
        line(io.out, `Approved memory "${e.record.id}" (${e.provider}): recall now uses it.`);
        return EXIT.OK;
      }
      case "reject": {
        const e = await memory.reject(call, id!, opts.provider);
        line(io.out, `Rejected the memory draft "${e.record.id}" (${e.provider}): it is gone.`);
        return EXIT.OK;
      }
      case "forget": {
        const e = await memory.forget(call, id!, opts.provider);
        line(io.out, `Forgot memory "${e.record.id}" (${e.provider}).`);
        return EXIT.OK;
      }
    }
  } catch (err) {
    if (err instanceof MemoryAuditError && err.reason === "no_provider") {
      const failed = kernel
        .listProviders()
        .filter(
          (p) => p.state === "failed" && (p.categories.length === 0 || p.categories.includes("memory")),
        );
      if (failed.length > 0)
        throw new CliError(
          `agent: ${err.message}; these providers failed to start:\n${failed.map((p) => `  ${p.name}: ${p.error ?? "unknown error"}`).join("\n")}`,
          EXIT.ERROR,
        );
    }
    if (err instanceof MemoryAuditError)
      throw new CliError(
        `agent: ${err.message}`,
        err.reason === "invalid" || err.reason === "ambiguous" ? EXIT.USAGE : EXIT.ERROR,
      );
    if (err instanceof CliError) throw err;
    throw new CliError(`agent: memory ${action} failed: ${(err as Error).message}`, EXIT.ERROR);
  } finally {
    await kernel.shutdown().catch(() => {});
  }
}
