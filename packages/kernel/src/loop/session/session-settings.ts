// The settings an operator changes on a running session and expects to find again when it
// is resumed: the /model choice (put ahead of the profile's chain) and plan mode. Each
// change is a session_setting event (kernel producer) at the point it happened, so a
// replay shows it and a resume applies the latest of each; the model choice is also kept
// in session_meta.model_override, in the same transaction, for `sessions list`.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { AgentProfile } from "@pluggableharness/config";
import { type SessionSettingEvent, SessionSettingEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import type { SessionWriter } from "@pluggableharness/state";
import type { LoopDeps } from "../deps.ts";
import type { ModelCandidate } from "../turn/model-call.ts";
import { profileCandidates } from "./candidates.ts";
import type { SessionLog } from "./session-log.ts";
import type { SettingsState } from "./settings-state.ts";

/** What the settings read and record of their session. */
export interface SettingsSession {
  readonly id: string;
  readonly profile: AgentProfile;
  readonly writer: Pick<SessionWriter, "transaction" | "setModelOverride" | "openReader" | "meta">;
  readonly log: Pick<SessionLog, "persist">;
  readonly deps: Pick<LoopDeps, "kernelProducer" | "providers" | "log">;
  readonly settings: SettingsState;
  /** The model chain now, the operator's choice first. */
  candidates(): ModelCandidate[];
}

/** What the latest session_setting events of a file say, each absent when none set it. */
export interface StoredSettings {
  /** The model choice in force: a model, or null when it was cleared. */
  readonly model?: { readonly provider: string; readonly modelId: string } | null;
  readonly planMode?: boolean;
}

function persist(session: SettingsSession, event: SessionSettingEvent, modelOverride?: string | null): void {
  session.writer.transaction(() => {
    if (modelOverride !== undefined) session.writer.setModelOverride(modelOverride ?? undefined);
    session.log.persist(
      EventKind.SESSION_SETTING,
      session.deps.kernelProducer,
      toBinary(SessionSettingEventSchema, event),
    );
  });
}

const label = (c: { provider: string; modelId: string } | undefined): string =>
  c ? `${c.provider}/${c.modelId}` : "";

/**
 * The candidate `provider/modelId` stands for in this session: the profile's own entry
 * (with its configured parameters) when the chain has it, else the bare model.
 */
export function overrideCandidate(
  session: SettingsSession,
  provider: string,
  modelId: string,
): ModelCandidate {
  const own = profileCandidates(session.profile, session.deps).find(
    (c) => c.provider === provider && c.modelId === modelId,
  );
  return own ?? { provider, modelId };
}

/**
 * Sets (a candidate) or clears (undefined) the operator's model choice and records it.
 * Recording nothing when nothing changes keeps a repeated `/model x` out of the history.
 */
export function chooseModel(
  session: SettingsSession,
  choice: ModelCandidate | undefined,
  origin: string,
  detail = "",
): void {
  const before = session.settings.modelOverride;
  const previous = label(session.candidates()[0]);
  session.settings.modelOverride = choice;
  if (label(before) === label(choice)) return;
  persist(
    session,
    create(SessionSettingEventSchema, {
      change: {
        case: "model",
        value: { provider: choice?.provider ?? "", modelId: choice?.modelId ?? "", previous },
      },
      origin,
      detail,
    }),
    choice ? label(choice) : null,
  );
}

/** Turns plan mode on or off and records the change (nothing when it is already so). */
export function setPlanMode(session: SettingsSession, on: boolean, origin: string): void {
  if (session.settings.planMode === on) return;
  session.settings.planMode = on;
  persist(
    session,
    create(SessionSettingEventSchema, { change: { case: "planMode", value: { on } }, origin }),
  );
}

/** The latest model choice and plan mode recorded in the session's file. */
export function storedSettings(session: SettingsSession): StoredSettings {
  const reader = session.writer.openReader();
  let model: StoredSettings["model"];
  let planMode: boolean | undefined;
  try {
    for (const e of reader.events({ kinds: [EventKind.SESSION_SETTING] })) {
      if (e.schemaVersion !== "1" && e.schemaVersion !== "v1") continue;
      let s: SessionSettingEvent;
      try {
        s = fromBinary(SessionSettingEventSchema, e.payload);
      } catch {
        continue; // a damaged event is reported by show/replay; it sets nothing
      }
      if (s.change.case === "model") {
        const { provider, modelId } = s.change.value;
        model = provider && modelId ? { provider, modelId } : null;
      } else if (s.change.case === "planMode") {
        planMode = s.change.value.on;
      }
    }
  } finally {
    reader.close();
  }
  return { ...(model !== undefined ? { model } : {}), ...(planMode !== undefined ? { planMode } : {}) };
}

/** Why `provider/modelId` cannot serve this session now, or undefined when it can. */
async function unavailable(
  session: SettingsSession,
  provider: string,
  modelId: string,
): Promise<string | undefined> {
  const providers = session.deps.providers;
  const p = providers.get(provider);
  if (!p) return `provider "${provider}" is not in agent.hcl`;
  if (!p.models) return `provider "${provider}" serves no models`;
  try {
    await providers.activate(provider);
  } catch (err) {
    return `provider "${provider}" failed to start: ${(err as Error).message}`;
  }
  if (!p.models.models.has(modelId)) {
    const known = [...p.models.models.keys()].join(", ");
    return `provider "${provider}" does not serve "${modelId}" (it serves ${known || "none"})`;
  }
  return undefined;
}

/**
 * Applies what the file recorded to a session being resumed: plan mode, and the model
 * choice unless `model` is false (a run that names its own model). A choice that can no
 * longer be served is dropped, recorded (origin "resume", with why) and returned as a
 * warning: the session goes on with its profile's chain rather than failing.
 */
export async function restoreSettings(
  session: SettingsSession,
  options: { readonly model?: boolean } = {},
): Promise<string[]> {
  const stored = storedSettings(session);
  if (stored.planMode !== undefined) session.settings.planMode = stored.planMode;
  const m = stored.model;
  // The events are the record; the listing column follows them (a file copied or forked
  // without its session_meta column, e.g. by a rewind, is put right here).
  const column = m ? label(m) : undefined;
  if (session.writer.meta().modelOverride !== column) session.writer.setModelOverride(column);
  if (!m || options.model === false) return [];
  const why = await unavailable(session, m.provider, m.modelId);
  if (why === undefined) {
    session.settings.modelOverride = overrideCandidate(session, m.provider, m.modelId);
    return [];
  }
  // Recorded as a change from the stored choice, so the history says what was dropped.
  session.settings.modelOverride = { provider: m.provider, modelId: m.modelId };
  const fallback = label(profileCandidates(session.profile, session.deps)[0]) || "the profile's chain";
  const warning = `the model this session was switched to, ${m.provider}/${m.modelId}, is no longer available (${why}); it continues with its profile's model (${fallback})`;
  chooseModel(session, undefined, "resume", why);
  session.deps.log.warn(warning, undefined, session.id);
  return [warning];
}
