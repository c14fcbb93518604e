// Memory-provider checks (memory/conformance.md): identity, the fixed type and scope
// taxonomies, a write/read/update/delete round trip through the audit path
// (ListRecords/GetRecord), not_found on unknown ids, invalid_type/invalid_scope,
// ratification only when declared, pending records hidden from Recall by default,
// relevance scores in [0, 1], tokens through CountTokens, classified failures, health.
import { HookPoint, PluginCategory } from "@pluggableharness/protocol/common";
import {
  type MemoryCapabilities,
  MemoryCapabilitiesSchema,
  type MemoryRecord,
  MemoryScope,
  MemoryService,
  MemoryType,
  RecordStatus,
} from "@pluggableharness/protocol/memory";
import {
  badEnumValues,
  Code,
  checkFailsWith,
  checkHealth,
  checkOpening,
  codeName,
  failureCode,
} from "../common/checks.ts";
import { CONFORMANCE_SESSION, ulid } from "../common/ids.ts";
import type { CategoryChecks, CheckContext } from "../runner.ts";

const P = "memory";
const MISSING_ID = "conformance-no-such-record-7f3b";

export const memoryChecks: CategoryChecks = async (ctx) => {
  const client = ctx.host.client(MemoryService);
  const { caps, configured } = await checkOpening(ctx, P, {
    category: PluginCategory.MEMORY,
    client,
    capabilitiesSchema: MemoryCapabilitiesSchema,
    declarations: (c) => checkDeclarations(ctx, c),
  });
  if (!configured || !caps || caps.supportedTypes.length === 0 || caps.supportedScopes.length === 0) {
    ctx.record(
      `${P}.record`,
      "skip",
      "no record written: the configuration or the capabilities were refused",
    );
    checkHealth(ctx, P);
    return;
  }
  const callContext = {
    sessionId: CONFORMANCE_SESSION,
    turnId: ulid(),
    workingDirectory: ctx.workingDirectory,
  };
  const type = caps.supportedTypes[0]!;
  const scope = caps.supportedScopes.includes(MemoryScope.SESSION)
    ? MemoryScope.SESSION
    : caps.supportedScopes[0]!;
  const text = (t: string) => [{ block: { case: "text" as const, value: { text: t } } }];

  // The round trip: Record, then find it through the audit path.
  const counted = ctx.kernel.countTokensCalls;
  let id = "";
  const written = await failureCode(async () => {
    const r = (
      await client.record({
        type,
        scope,
        title: "Conformance probe",
        content: text("The conformance suite wrote this record and deletes it again."),
        provenance: { sourceSessionId: CONFORMANCE_SESSION, recordedBy: "conformance" },
        callContext,
      })
    ).result;
    id = r?.id ?? "";
    const pendingWithout = r?.status === RecordStatus.PENDING && !caps.ratificationSupported;
    ctx.record(
      `${P}.record`,
      !id ? "fail" : pendingWithout ? "fail" : "pass",
      !id
        ? "Record returned no id"
        : pendingWithout
          ? "Record returned status PENDING although ratification_supported is false"
          : `recorded "${id}" (${RecordStatus[r?.status ?? 0]})`,
    );
  });
  if (written !== undefined) {
    ctx.record(
      `${P}.record`,
      "fail",
      `Record of a supported type and scope failed with ${codeName(written)}`,
    );
  }
  if (id) await checkAuditPath(ctx, id, type, scope, counted);
  await checkRecall(ctx, caps);

  await checkFailsWith(ctx, `${P}.errors.not_found.get`, "GetRecord of an unknown id", [Code.NOT_FOUND], () =>
    client.getRecord({ id: MISSING_ID, callContext }),
  );
  await checkFailsWith(
    ctx,
    `${P}.errors.not_found.update`,
    "UpdateRecord of an unknown id",
    [Code.NOT_FOUND],
    () => client.updateRecord({ id: MISSING_ID, title: "x", callContext }),
  );
  await checkFailsWith(
    ctx,
    `${P}.errors.not_found.delete`,
    "DeleteRecord of an unknown id",
    [Code.NOT_FOUND],
    () => client.deleteRecord({ id: MISSING_ID, callContext }),
  );
  const otherType = [MemoryType.USER, MemoryType.FEEDBACK, MemoryType.PROJECT, MemoryType.REFERENCE].find(
    (t) => !caps.supportedTypes.includes(t),
  );
  await checkFailsWith(
    ctx,
    `${P}.errors.invalid_type`,
    otherType ? `Record of the unsupported type ${MemoryType[otherType]}` : "Record of type UNSPECIFIED",
    [Code.INVALID_ARGUMENT],
    () =>
      client.record({
        type: otherType ?? MemoryType.UNSPECIFIED,
        scope,
        title: "bad type",
        content: text("x"),
        callContext,
      }),
  );
  const otherScope = [MemoryScope.SESSION, MemoryScope.PROJECT, MemoryScope.GLOBAL].find(
    (s) => !caps.supportedScopes.includes(s),
  );
  await checkFailsWith(
    ctx,
    `${P}.errors.invalid_scope`,
    otherScope ? `Record in the unsupported scope ${MemoryScope[otherScope]}` : "Record in scope UNSPECIFIED",
    [Code.INVALID_ARGUMENT],
    () =>
      client.record({
        type,
        scope: otherScope ?? MemoryScope.UNSPECIFIED,
        title: "bad scope",
        content: text("x"),
        callContext,
      }),
  );
  if (caps.ratificationSupported) {
    await checkFailsWith(ctx, `${P}.ratification`, "ApproveRecord of an unknown id", [Code.NOT_FOUND], () =>
      client.approveRecord({ id: MISSING_ID }),
    );
  } else {
    await checkFailsWith(
      ctx,
      `${P}.ratification`,
      "ApproveRecord without ratification_supported",
      [Code.FAILED_PRECONDITION, Code.UNIMPLEMENTED],
      () => client.approveRecord({ id: MISSING_ID }),
    );
  }
  checkHealth(ctx, P);
};

function checkDeclarations(ctx: CheckContext, caps: MemoryCapabilities): void {
  const problems: string[] = [];
  if (caps.defaultTokenBudget <= 0n) problems.push("default_token_budget is not positive");
  if (caps.supportedTypes.length === 0) problems.push("no supported type");
  if (caps.supportedScopes.length === 0) problems.push("no supported scope");
  const types = badEnumValues(caps.supportedTypes, MemoryType);
  if (types.length) problems.push(`types outside the fixed taxonomy: ${types.join(", ")}`);
  const scopes = badEnumValues(caps.supportedScopes, MemoryScope);
  if (scopes.length) problems.push(`scopes outside the fixed taxonomy: ${scopes.join(", ")}`);
  const points = badEnumValues(caps.supportedHookPoints, HookPoint);
  if (points.length) problems.push(`unknown hook points ${points.join(", ")}`);
  ctx.record(
    `${P}.capabilities.declared`,
    problems.length ? "fail" : "pass",
    problems.length
      ? problems.join("; ")
      : `types ${caps.supportedTypes.map((t) => MemoryType[t]).join(", ")}; scopes ${caps.supportedScopes.map((s) => MemoryScope[s]).join(", ")}${caps.ratificationSupported ? "; ratification" : ""}`,
  );
}

/** GetRecord and ListRecords find the record; an update keeps its type and scope; a delete removes it. */
async function checkAuditPath(
  ctx: CheckContext,
  id: string,
  type: MemoryType,
  scope: MemoryScope,
  countedBefore: number,
): Promise<void> {
  const client = ctx.host.client(MemoryService);
  const callContext = {
    sessionId: CONFORMANCE_SESSION,
    turnId: ulid(),
    workingDirectory: ctx.workingDirectory,
  };
  const got = (await client.getRecord({ id, callContext })).record;
  const problems: string[] = [];
  if (!got) problems.push("GetRecord returned no record");
  else {
    if (got.id !== id) problems.push(`GetRecord answered with id "${got.id}"`);
    if (got.type !== type || got.scope !== scope)
      problems.push("type or scope differ from what was recorded");
    if (got.title !== "Conformance probe") problems.push(`title came back as ${JSON.stringify(got.title)}`);
    if (got.relevanceScore !== undefined)
      problems.push("GetRecord set relevance_score (Recall/ListRecords only)");
  }
  const listed = (await client.listRecords({ callContext })).records.some((r) => r.id === id);
  if (!listed) problems.push("ListRecords does not list it");
  ctx.record(
    `${P}.audit`,
    problems.length ? "fail" : "pass",
    problems.length ? problems.join("; ") : "GetRecord and ListRecords find the record",
  );
  if (got)
    ctx.record(
      `${P}.tokens`,
      got.tokens <= 0n ? "warn" : ctx.kernel.countTokensCalls > countedBefore ? "pass" : "fail",
      got.tokens <= 0n
        ? "the record carries no token count"
        : ctx.kernel.countTokensCalls > countedBefore
          ? "record tokens came from the kernel's CountTokens"
          : "the record carries a token count, but CountTokens was never called",
    );

  const updated = await failureCode(() =>
    client.updateRecord({
      id,
      title: "Conformance probe, updated",
      content: [{ block: { case: "text", value: { text: "Replaced wholesale by the conformance suite." } } }],
      callContext,
    }),
  );
  const after = updated === undefined ? (await client.getRecord({ id, callContext })).record : undefined;
  ctx.record(
    `${P}.update`,
    updated !== undefined
      ? "fail"
      : after?.title === "Conformance probe, updated" && after.type === type && after.scope === scope
        ? "pass"
        : "fail",
    updated !== undefined
      ? `UpdateRecord failed with ${codeName(updated)}`
      : after?.title !== "Conformance probe, updated"
        ? "the update is not visible to GetRecord"
        : after.type !== type || after.scope !== scope
          ? "an update changed the record's type or scope"
          : "updated in place, type and scope kept",
  );
  const deleted = await failureCode(() => client.deleteRecord({ id, callContext }));
  const gone = await failureCode(() => client.getRecord({ id, callContext }));
  ctx.record(
    `${P}.delete`,
    deleted === undefined && gone === Code.NOT_FOUND ? "pass" : "fail",
    deleted !== undefined
      ? `DeleteRecord failed with ${codeName(deleted)}`
      : gone === Code.NOT_FOUND
        ? "deleted; GetRecord then says not_found"
        : `after DeleteRecord, GetRecord ${gone === undefined ? "still finds it" : `fails with ${codeName(gone)}`}`,
  );
}

/** Recall: pending records only when asked for, scores in [0, 1], within the budget. */
async function checkRecall(ctx: CheckContext, caps: MemoryCapabilities): Promise<void> {
  const client = ctx.host.client(MemoryService);
  const callContext = {
    sessionId: CONFORMANCE_SESSION,
    turnId: ulid(),
    workingDirectory: ctx.workingDirectory,
  };
  const text = [
    { block: { case: "text" as const, value: { text: "Recall probe: the build uses conformance." } } },
  ];
  let probeId = "";
  const probe = await failureCode(async () => {
    const r = await client.record({
      type: caps.supportedTypes[0]!,
      scope: caps.supportedScopes.includes(MemoryScope.SESSION)
        ? MemoryScope.SESSION
        : caps.supportedScopes[0]!,
      title: "Recall probe",
      content: text,
      provenance: { sourceSessionId: CONFORMANCE_SESSION, recordedBy: "conformance" },
      callContext,
    });
    probeId = r.result?.id ?? "";
  });
  const budget = caps.defaultTokenBudget > 0n ? caps.defaultTokenBudget : 2_000n;
  let records: MemoryRecord[] = [];
  const failed = await failureCode(async () => {
    records = (
      await client.recall({
        sessionId: CONFORMANCE_SESSION,
        turnId: ulid(),
        tokenBudget: budget,
        workingDirectory: ctx.workingDirectory,
        modelTarget: { provider: "conformance", id: "conformance-1", contextWindow: 100_000n },
        query: "conformance",
      })
    ).records;
  });
  // The probe is the suite's own; it leaves the store as it found it.
  if (probeId) await failureCode(() => client.deleteRecord({ id: probeId, callContext }));
  if (failed !== undefined) {
    ctx.record(`${P}.recall`, "fail", `Recall failed with ${codeName(failed)}`);
    return;
  }
  const problems: string[] = [];
  if (records.some((r) => r.status === RecordStatus.PENDING))
    problems.push("returned PENDING records without include_pending");
  const outOfRange = records.filter(
    (r) => r.relevanceScore !== undefined && !(r.relevanceScore >= 0 && r.relevanceScore <= 1),
  );
  if (outOfRange.length)
    problems.push(`relevance_score outside [0, 1] on ${outOfRange.map((r) => r.id).join(", ")}`);
  const total = records.reduce((n, r) => n + r.tokens, 0n);
  if (total > budget) problems.push(`${total} tokens exceed the ${budget}-token budget`);
  ctx.record(
    `${P}.recall`,
    problems.length ? "fail" : "pass",
    problems.length
      ? problems.join("; ")
      : `${records.length} records, ${total} tokens${probe === undefined ? "" : " (the probe record was refused)"}`,
  );
}
