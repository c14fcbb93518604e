// The ActionNodes a session has shown its operators. An action_trigger is accepted only
// when it echoes one of them exactly (node id, provider, tool name and arguments), so a
// frontend can activate what a producer offered but cannot make one up: a model, a
// plugin or a stray client that sends a trigger nobody was shown gets refused before
// anything runs. What an accepted trigger then does is still decided by the gate and
// policy, exactly as for a direct-invoke slash command.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { ServerEvent } from "@pluggableharness/protocol/frontend";
import type { ActionNode, RenderNode, RenderTree } from "@pluggableharness/protocol/render";

/** Distinct node ids remembered per session (the oldest forgotten first). */
export const MAX_OFFERED_ACTIONS = 1000;

/** What a trigger names; the fields an ActionTrigger copies from its node. */
export interface ActionEcho {
  readonly nodeId: string;
  readonly provider: string;
  readonly toolName: string;
  readonly args?: JsonObject | undefined;
}

/** JSON with object keys sorted, so equal values compare equal whatever their key order. */
function canonical(value: JsonValue | undefined): string {
  if (value === undefined || value === null || typeof value !== "object")
    return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`;
}

function fingerprint(a: Omit<ActionEcho, "nodeId">): string {
  return `${a.provider}\u0000${a.toolName}\u0000${canonical(a.args ?? {})}`;
}

function* actionsIn(node: RenderNode | undefined, depth = 0): Generator<ActionNode> {
  const n = node?.node;
  // Render trees are shallow; the bound only stops a pathological one.
  if (!n || depth > 64) return;
  if (n.case === "action") yield n.value;
  else if (n.case === "group" || n.case === "collapsible")
    for (const c of n.value.children) yield* actionsIn(c, depth + 1);
  else if (n.case === "list") for (const c of n.value.items) yield* actionsIn(c, depth + 1);
}

/** Every tree a server event shows the operator. */
function treesOf(event: ServerEvent): Array<RenderTree | undefined> {
  const e = event.event;
  switch (e.case) {
    case "render":
      return [e.value.content?.content];
    case "permissionRequest":
      return [e.value.planItem?.preview];
    case "interactiveRequest":
      return [e.value.prompt];
    default:
      return [];
  }
}

export class ActionLedger {
  readonly #offered = new Map<string, Set<string>>();

  /** Remembers the actions in an event about to be delivered to the session's frontends. */
  note(event: ServerEvent): void {
    for (const tree of treesOf(event)) {
      for (const a of actionsIn(tree?.root)) {
        if (!a.id || !a.provider || !a.toolName) continue;
        const prints = this.#offered.get(a.id) ?? new Set<string>();
        this.#offered.delete(a.id);
        prints.add(fingerprint(a));
        this.#offered.set(a.id, prints);
        if (this.#offered.size > MAX_OFFERED_ACTIONS)
          this.#offered.delete(this.#offered.keys().next().value!);
      }
    }
  }

  /** Why a trigger is refused, or undefined when it echoes an action this session showed. */
  refusal(trigger: ActionEcho): string | undefined {
    const prints = this.#offered.get(trigger.nodeId);
    if (!prints) return `no action "${trigger.nodeId}" was shown in this session`;
    if (!prints.has(fingerprint(trigger))) {
      return `action "${trigger.nodeId}" does not match the action shown: provider, tool_name and args must be echoed unchanged`;
    }
    return undefined;
  }
}
