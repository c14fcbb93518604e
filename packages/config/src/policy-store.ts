// The durable store for ALWAYS-scoped plan decisions: `.agent/policy.auto.hcl` in
// the project, written with the HCL writer and read with the same policy decoder
// as agent.hcl. Each verdict is one policy block matching exactly one
// (provider, tool_name) pair, tagged with the profile it was given under.
// Deleting a block revokes the verdict.

import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseFile, writeHcl } from "@pluggableharness/hcl";
import { type Diags, decodeBody } from "./decode.ts";
import { type ConfigDiagnostic, fileDiag, fromHcl, hasErrors } from "./diagnostics.ts";
import type { PolicyRule } from "./model.ts";
import { conflictDiagnostics, decodePolicyBlock } from "./policy.ts";
import { type ArgumentScope, humanRule } from "./policy-engine.ts";

export const POLICY_STORE_FILE = join(".agent", "policy.auto.hcl");

/** Raised when an ALWAYS verdict cannot be made durable; the caller must reject it, not downgrade it. */
export class PolicyStoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PolicyStoreError";
  }
}

export type StoreReadResult =
  | { ok: true; rules: PolicyRule[] }
  | { ok: false; diagnostics: ConfigDiagnostic[] };

/** The ALWAYS rules of a project; a missing store is an empty list. */
export function loadAlwaysRules(projectDir: string): StoreReadResult {
  const file = join(projectDir, POLICY_STORE_FILE);
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return { ok: true, rules: [] };
    return {
      ok: false,
      diagnostics: [fileDiag("error", "io", file, "Cannot read the policy store", (e as Error).message)],
    };
  }
  const parsed = parseFile(bytes, file);
  const diags: Diags = parsed.diagnostics.map((d) => fromHcl(d, "parse"));
  const top = decodeBody(
    parsed.file.body,
    { blocks: { policy: { labels: 1 } } },
    parsed.file.range,
    "the policy store",
    diags,
  );
  const rules: PolicyRule[] = [];
  top.blocks.forEach((b, i) => {
    const rule = decodePolicyBlock(b, i, { origin: "always", allowProfile: true }, diags);
    if (rule !== undefined) rules.push(rule);
  });
  // Verdicts of different profiles never meet in one engine, so conflicts are per profile.
  for (const profile of new Set(rules.map((r) => r.profile))) {
    conflictDiagnostics(
      rules.filter((r) => r.profile === profile),
      diags,
    );
  }
  if (hasErrors(diags)) return { ok: false, diagnostics: diags };
  return { ok: true, rules };
}

export function renderPolicyStore(rules: readonly PolicyRule[]): string {
  const sorted = [...rules].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return writeHcl({
    header: [
      "Written by the agent: plan decisions a human made with scope ALWAYS.",
      "Each block allows or denies one provider's tool under one profile, narrowed to the command or",
      "path that was asked about when it has one. Delete a block to revoke it.",
    ],
    blocks: sorted.map((r) => ({
      type: "policy",
      labels: [r.name],
      attributes: {
        match: Object.fromEntries(Object.entries(r.match).filter(([, v]) => v !== undefined)),
        action: r.action,
        ...(r.profile === undefined ? {} : { profile: r.profile }),
      },
    })),
  });
}

/**
 * Records an ALWAYS verdict durably, one rule per scope (replacing earlier verdicts for
 * the same profile, pair and scope), and returns the rules to add to running engines.
 * Only the kernel calls this, with a human's answer. Throws PolicyStoreError when the
 * store cannot be read or written.
 */
export function recordAlwaysDecision(
  projectDir: string,
  verdict: {
    provider: string;
    tool_name: string;
    decision: "allow" | "deny";
    profile: string;
    /** The narrowest scopes covering the request (narrowestScope); default: the whole tool. */
    scopes?: readonly ArgumentScope[];
  },
): PolicyRule[] {
  const current = loadAlwaysRules(projectDir);
  if (!current.ok) {
    throw new PolicyStoreError(
      `The policy store ${POLICY_STORE_FILE} is invalid; fix or delete it before recording ALWAYS decisions.`,
    );
  }
  const made = (verdict.scopes ?? [{}]).map((scope) =>
    humanRule("always", verdict.provider, verdict.tool_name, verdict.decision, 0, verdict.profile, scope),
  );
  const names = new Set(made.map((r) => r.name));
  const others = current.rules.filter((r) => !names.has(r.name));
  made.forEach((r, i) => {
    r.order = others.length + i;
  });
  const file = join(projectDir, POLICY_STORE_FILE);
  try {
    mkdirSync(dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, renderPolicyStore([...others, ...made]));
    renameSync(tmp, file);
  } catch (e) {
    throw new PolicyStoreError(`Cannot write the policy store ${file}: ${(e as Error).message}`, {
      cause: e,
    });
  }
  return made;
}

/**
 * Removes one ALWAYS rule from the store by name (the operator revoked it). Answers
 * false when the store has no rule by that name. Throws PolicyStoreError when the store
 * cannot be read or written.
 */
export function removeAlwaysRule(projectDir: string, name: string): boolean {
  const current = loadAlwaysRules(projectDir);
  if (!current.ok) {
    throw new PolicyStoreError(
      `The policy store ${POLICY_STORE_FILE} is invalid; fix or delete it before revoking rules.`,
    );
  }
  const kept = current.rules.filter((r) => r.name !== name);
  if (kept.length === current.rules.length) return false;
  const file = join(projectDir, POLICY_STORE_FILE);
  try {
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, renderPolicyStore(kept));
    renameSync(tmp, file);
  } catch (e) {
    throw new PolicyStoreError(`Cannot write the policy store ${file}: ${(e as Error).message}`, {
      cause: e,
    });
  }
  return true;
}
