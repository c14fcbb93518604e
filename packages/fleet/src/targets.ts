// A batch's tasks from what `agent batch submit` is given: targets on the command line or
// in a file (one per line), or a JSONL file of per-task variables; and the prompt
// template those variables fill in ({{name}}; {{target}} is always defined).
import { readFileSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import type { Target } from "./types.ts";

export class TargetError extends Error {
  override readonly name = "TargetError";
}

const URL_LIKE = /^(?:[a-z][a-z0-9+.-]*:\/\/|[^/\s@]+@[^:\s]+:)/i;

/**
 * A target as written: a local path (copied; with `#ref`, cloned at that ref), or a git
 * URL with an optional `#ref` (https://host/repo.git#main, git@host:repo.git#v2).
 */
export function parseTarget(text: string, cwd: string): Target {
  const t = text.trim();
  if (t === "") throw new TargetError("an empty target");
  const hash = t.lastIndexOf("#");
  const location = hash > 0 ? t.slice(0, hash) : t;
  const ref = hash > 0 ? t.slice(hash + 1) : undefined;
  if (ref !== undefined && !/^[\w./@^~{}-]+$/.test(ref))
    throw new TargetError(`target ${t}: "${ref}" is not a git ref`);
  if (URL_LIKE.test(location)) return { kind: "git", location, ...(ref ? { ref } : {}) };
  const abs = isAbsolute(location) ? location : resolve(cwd, location);
  return { kind: "path", location: abs, ...(ref ? { ref } : {}) };
}

/** Fills `{{name}}` from `vars`; an unknown name is an error (a typo must not reach the model). */
export function fillTemplate(
  template: string,
  vars: Readonly<Record<string, string>>,
  where: string,
): string {
  return template.replace(/\{\{\s*([A-Za-z_][\w.-]*)\s*\}\}/g, (_m, name: string) => {
    const v = vars[name];
    if (v === undefined) {
      throw new TargetError(
        `${where}: the prompt uses {{${name}}}, which is not defined (defined: ${Object.keys(vars).sort().join(", ")})`,
      );
    }
    return v;
  });
}

export interface PlannedTask {
  readonly target: Target;
  readonly prompt: string;
}

/** Tasks from targets given directly: the template sees {{target}} only. */
export function tasksFromTargets(template: string, targets: readonly string[], cwd: string): PlannedTask[] {
  return targets.map((text, i) => ({
    target: parseTarget(text, cwd),
    prompt: fillTemplate(template, { target: text.trim() }, `target ${i + 1} (${text.trim()})`),
  }));
}

/** Lines of a targets file: blank lines and # comments skipped. */
export function readTargetsFile(file: string): string[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
}

/**
 * Tasks from a JSONL file: one object per line with a `target` (and optional `ref`), every
 * other string/number/boolean field a variable of the template. Errors name file:line.
 */
export function tasksFromJsonl(template: string, file: string, cwd: string): PlannedTask[] {
  const out: PlannedTask[] = [];
  const lines = readFileSync(file, "utf8").split("\n");
  lines.forEach((raw, i) => {
    const where = `${file}:${i + 1}`;
    if (raw.trim() === "") return;
    let rec: unknown;
    try {
      rec = JSON.parse(raw);
    } catch (err) {
      throw new TargetError(`${where}: not JSON (${(err as Error).message})`);
    }
    if (typeof rec !== "object" || rec === null || Array.isArray(rec)) {
      throw new TargetError(`${where}: each line must be a JSON object`);
    }
    const o = rec as Record<string, unknown>;
    if (typeof o["target"] !== "string")
      throw new TargetError(`${where}: "target" (a path or git URL) is required`);
    const vars: Record<string, string> = {};
    for (const [k, v] of Object.entries(o)) {
      if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") vars[k] = String(v);
      else throw new TargetError(`${where}: "${k}" must be a string, number or boolean`);
    }
    const ref = typeof o["ref"] === "string" ? `#${o["ref"]}` : "";
    let target: Target;
    try {
      target = parseTarget(`${o["target"]}${ref}`, cwd);
    } catch (err) {
      throw new TargetError(`${where}: ${(err as Error).message}`);
    }
    out.push({ target, prompt: fillTemplate(template, vars, where) });
  });
  return out;
}
