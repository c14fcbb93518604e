// Re-applies, one at a time, the wiring mutants issue 25 names (docs/conformance.md, "Real-path
// mutants"): each breaks the line that applies a seed rule on the real path; the test that
// guards it must then fail. The line is restored after each run, whatever happens.
//   node scripts/wiring-mutants.ts [name ...]
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

interface Mutant {
  readonly name: string;
  readonly file: string;
  readonly from: string;
  readonly to: string;
  readonly test: string;
  /** vitest -t filter: the tests of `test` that guard this line. */
  readonly only: string;
}

const MUTANTS: readonly Mutant[] = [
  {
    name: "getschema-swallowed",
    file: "packages/kernel/src/plugins/providers.ts",
    from: "    tools = validateToolSchemas(name, res);",
    to: "    try { tools = validateToolSchemas(name, res); } catch { tools = validateToolSchemas(name, { ...res, tools: [] }); }",
    test: "packages/kernel/test/loop/wiring.test.ts",
    only: "GetSchema",
  },
  {
    name: "getcapabilities-swallowed",
    file: "packages/kernel/src/plugins/providers.ts",
    from: "    models = validateCapabilities(name, caps);",
    to: "    try { models = validateCapabilities(name, caps); } catch { models = validateCapabilities(name, { ...caps, models: [] }); }",
    test: "packages/kernel/test/loop/wiring.test.ts",
    only: "GetCapabilities",
  },
  {
    name: "load-failures-tolerated",
    file: "packages/kernel/src/plugins/providers.ts",
    from: "if (failures.length > 0 && !options.tolerateFailures) throw new ProviderLoadError(failures);",
    to: "if (false) throw new ProviderLoadError(failures);",
    test: "packages/kernel/test/loop/wiring.test.ts",
    only: "refused at load",
  },
  {
    name: "hook-point-check-dropped",
    file: "packages/kernel/src/plugins/providers.ts",
    from: "      (d) => !MODEL_REFERENCE_CATEGORIES.has(d.category) && !TOOL_REFERENCE_CATEGORIES.has(d.category),",
    to: '      (d) => d.category !== "hook_point" && !MODEL_REFERENCE_CATEGORIES.has(d.category) && !TOOL_REFERENCE_CATEGORIES.has(d.category),',
    test: "packages/kernel/test/loop/wiring.test.ts",
    only: "hook",
  },
  {
    name: "hook-failed-provider-skipped",
    file: "packages/kernel/src/plugins/providers.ts",
    from: "    if (hookDiags.length > 0) throw new ConfigError(hookDiags);",
    to: "",
    test: "packages/kernel/test/loop/wiring.test.ts",
    only: "hook",
  },
  {
    name: "components-unsorted",
    file: "packages/kernel/src/domain/cost.ts",
    from: "  return create(UsageRecordSchema, { usage: normalized, costUsd: cost, receivedAt, pricingTierIndex: index });",
    to: "  return create(UsageRecordSchema, { usage, costUsd: cost, receivedAt, pricingTierIndex: index });",
    test: "packages/kernel/test/loop/wiring.test.ts",
    only: "usage on the persist path",
  },
  {
    name: "tier-at-request-time",
    file: "packages/kernel/src/loop/turn/model-call.ts",
    from: "    clock: () => timestampFromMillis(deps.clock.now()),",
    to: "    clock: ((t) => () => t)(timestampFromMillis(deps.clock.now())),",
    test: "packages/kernel/test/loop/wiring.test.ts",
    only: "usage on the persist path",
  },
  {
    name: "toolcall-turn-id-dropped",
    file: "packages/kernel/src/loop/turn/tool-exec.ts",
    from: "    callContext: { sessionId: session.id, turnId: input.turnId, workingDirectory: session.workingDirectory },",
    to: "    callContext: { sessionId: session.id, workingDirectory: session.workingDirectory },",
    test: "packages/kernel/test/loop/wiring.test.ts",
    only: "call_context",
  },
  {
    name: "request-turn-id-dropped",
    file: "packages/kernel/src/loop/turn/model-call.ts",
    from: "          turnId: input.turnId,\n          workingDirectory: ctx.workingDirectory,",
    to: "          workingDirectory: ctx.workingDirectory,",
    test: "packages/kernel/test/loop/wiring.test.ts",
    only: "call_context",
  },
  {
    name: "tool-choice-not-sent",
    file: "packages/kernel/src/loop/turn/model-call.ts",
    from: "    ...(p.tool_choice !== undefined ? { toolChoice: toolChoiceFromConfig(p.tool_choice) } : {}),",
    to: "",
    test: "packages/kernel/test/loop/wiring.test.ts",
    only: "tool_choice",
  },
  {
    name: "tool-choice-kept-without-tools",
    file: "packages/kernel/src/loop/turn/model-call.ts",
    from: "    const wanted = paramsForRequest(c.params, toolNames);",
    to: "    const wanted = c.params;",
    test: "packages/kernel/test/loop/wiring.test.ts",
    only: "tool_choice",
  },
  {
    name: "tool-choice-modes-unchecked",
    file: "packages/config/src/validate.ts",
    from: "    if (!spec.supportedToolChoiceModes.includes(mode)) {",
    to: "    if (false && !spec.supportedToolChoiceModes.includes(mode)) {",
    test: "packages/kernel/test/loop/wiring.test.ts",
    only: "tool_choice",
  },
  {
    name: "content-as-routing-exhausted",
    file: "packages/kernel/src/loop/turn/model-call.ts",
    from: '    category: asked > 0 && refusedContent === asked ? "invalid_request" : "routing_exhausted",',
    to: '    category: "routing_exhausted",',
    test: "packages/kernel/test/loop/wiring.test.ts",
    only: "images and documents",
  },
  {
    name: "unbilled-attempt-not-persisted",
    file: "packages/kernel/src/loop/turn/model-call.ts",
    from: "(outcome.completion.usage.length > 0 || requestId)",
    to: "(outcome.completion.usage.length > 0)",
    test: "packages/kernel/test/loop/wiring.test.ts",
    only: "request id",
  },
  {
    name: "request-id-not-logged",
    file: "packages/kernel/src/loop/turn/model-call.ts",
    from: "          ...(requestId ? { vendorRequestId: requestId } : {}),\n",
    to: "",
    test: "packages/kernel/test/loop/wiring.test.ts",
    only: "request id",
  },
  {
    name: "request-id-not-shown",
    file: "packages/kernel/src/loop/turn/model-call.ts",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: source text to find, not a template
    from: '  return requestId ? ` [vendor request id ${requestId}]` : "";',
    to: '  return "";',
    test: "packages/kernel/test/loop/wiring.test.ts",
    only: "request id",
  },
  {
    name: "safe-without-keys-silent",
    file: "packages/kernel/src/domain/tool-schema.ts",
    from: "      if (spec.safe && spec.keyFields.length === 0 && raw.kind === ToolKind.RESOURCE) {",
    to: "      if (false) {",
    test: "packages/kernel/test/loop/wiring.test.ts",
    only: "safe: true without key_fields",
  },
  {
    name: "terminates-only-on-success",
    file: "packages/kernel/src/loop/turn/gate-step.ts",
    from: "onPostToolCall: (c) => done.postToolCallFired(c.block.id),",
    to: 'onPostToolCall: (c) => c.result!.status === "succeeded" && done.postToolCallFired(c.block.id),',
    test: "packages/kernel/test/loop/gate.test.ts",
    only: "terminates_turn",
  },
  {
    name: "vendor-tool-call-ids-kept",
    file: "packages/kernel/src/loop/turn/model-call.ts",
    from: "    newToolCallId: () => deps.newId(),\n",
    to: "",
    test: "packages/kernel/test/loop/wiring.test.ts",
    only: "tool call ids",
  },
  {
    name: "kernel-ids-sent-to-vendor",
    file: "packages/kernel/src/loop/turn/model-call.ts",
    from: "      messages: withVendorToolCallIds(fitted.messages),",
    to: "      messages: [...fitted.messages],",
    test: "packages/kernel/test/loop/wiring.test.ts",
    only: "tool call ids",
  },
];

const root = join(import.meta.dirname, "..");
const wanted = process.argv.slice(2);
let survived = 0;
for (const m of MUTANTS) {
  if (wanted.length > 0 && !wanted.includes(m.name)) continue;
  const path = join(root, m.file);
  const original = readFileSync(path, "utf8");
  if (original.split(m.from).length !== 2) {
    console.log(`${m.name}: NOT APPLIED (the line is gone or repeated in ${m.file})`);
    survived++;
    continue;
  }
  writeFileSync(path, original.replace(m.from, m.to));
  let killed: boolean;
  try {
    const r = spawnSync(join(root, "node_modules/.bin/vitest"), ["run", m.test, "-t", m.only], {
      cwd: root,
      encoding: "utf8",
    });
    killed = r.status !== 0;
  } finally {
    writeFileSync(path, original);
  }
  if (!killed) survived++;
  console.log(`${m.name}: ${killed ? "killed" : "SURVIVED"} (${m.test})`);
}
process.exit(survived === 0 ? 0 : 1);
