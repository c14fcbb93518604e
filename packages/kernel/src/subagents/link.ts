// A sub-agent's place in its session tree, as frontends see it: every change worth
// showing (it started, a turn began, a tool call started or ended, its status moved) is
// sent as a SessionTreeUpdate to the channel of each ancestor, so a frontend attached to
// the root watches the whole tree without subscribing to every child.
import { SessionStatus } from "@pluggableharness/protocol/session";
import type { ServerEventInit } from "../frontends/channel.ts";

/** What the link reads of its session and of each ancestor; Session provides it. */
export interface LinkedSession {
  readonly id: string;
  readonly parentId: string | undefined;
  readonly parent: LinkedSession | undefined;
  readonly depth: number;
  readonly profile: { readonly name: string };
  readonly cost: { readonly turns: number; readonly spentUsd: number };
  readonly lastStatusDetail: string;
  readonly channel: { publish(init: ServerEventInit): void };
  status(): SessionStatus;
}

export class SubagentLink {
  readonly #s: LinkedSession;
  readonly title: string;
  #activity = "";

  constructor(session: LinkedSession, title: string) {
    this.#s = session;
    this.title = title.split("\n")[0]!.slice(0, 200);
  }

  get activity(): string {
    return this.#activity;
  }

  /** What the child is doing now ("" once it ended); tells every ancestor. */
  progress(activity?: string): void {
    if (activity !== undefined) this.#activity = activity;
    const s = this.#s;
    const status = s.status();
    if (status !== SessionStatus.RUNNING) this.#activity = "";
    const update = {
      parentSessionId: s.parentId ?? "",
      childSessionId: s.id,
      status,
      profile: s.profile.name,
      depth: s.depth,
      title: this.title,
      activity: this.#activity,
      turns: s.cost.turns,
      costUsd: s.cost.spentUsd,
      detail: status === SessionStatus.RUNNING ? "" : s.lastStatusDetail,
    };
    for (let a = s.parent; a; a = a.parent) {
      a.channel.publish({ event: { case: "sessionTreeUpdate", value: update } });
    }
  }
}
