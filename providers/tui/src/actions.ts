// The actions (ActionNodes) the operator can activate from the keyboard: those in the
// widget panel, which is redrawn and so can show which one has focus, then the most
// recent ones in the transcript, newest first (scrollback cannot be redrawn, so the
// focused one is named in the live region instead). Ctrl-T focuses the first; Tab or
// the arrows move; Enter activates; Esc or any other key leaves.
import type { ActionNode } from "@pluggableharness/protocol/render";

/** Transcript actions kept for the keyboard (the panel's are always all there). */
export const RECENT_ACTIONS = 20;

export class ActionFocus {
  private panel: ActionNode[] = [];
  private recent: ActionNode[] = [];
  private index: number | undefined;
  private focusedId: string | undefined;

  /** The panel's actions, replaced whenever it is redrawn. */
  setPanel(actions: readonly ActionNode[]): void {
    this.panel = [...actions];
    this.follow();
  }

  /** Actions in content just committed to the transcript. */
  shown(actions: readonly ActionNode[]): void {
    if (actions.length === 0) return;
    const ids = new Set(actions.map((a) => a.id));
    this.recent = [...this.recent.filter((a) => !ids.has(a.id)), ...actions].slice(-RECENT_ACTIONS);
    this.follow();
  }

  /** Panel first, then the transcript's newest first. */
  choices(): ActionNode[] {
    const panelIds = new Set(this.panel.map((a) => a.id));
    return [...this.panel, ...[...this.recent].reverse().filter((a) => !panelIds.has(a.id))];
  }

  get active(): boolean {
    return this.index !== undefined;
  }

  /** The focused action, if any. */
  get current(): ActionNode | undefined {
    return this.index === undefined ? undefined : this.choices()[this.index];
  }

  /** Where the focused action sits (1-based) among how many. */
  get position(): { at: number; of: number } {
    return { at: (this.index ?? 0) + 1, of: this.choices().length };
  }

  /** Focuses the first action; false when there is none. */
  start(): boolean {
    if (this.choices().length === 0) return false;
    this.index = 0;
    this.focusedId = this.choices()[0]!.id;
    return true;
  }

  move(step: 1 | -1): void {
    const n = this.choices().length;
    if (this.index === undefined || n === 0) return;
    this.index = (this.index + step + n) % n;
    this.focusedId = this.choices()[this.index]!.id;
  }

  clear(): void {
    this.index = undefined;
    this.focusedId = undefined;
  }

  /** Forgets everything (another session is shown). */
  reset(): void {
    this.panel = [];
    this.recent = [];
    this.clear();
  }

  /** Keeps focus on the same action when the lists change under it, or leaves it if gone. */
  private follow(): void {
    if (this.focusedId === undefined) return;
    const i = this.choices().findIndex((a) => a.id === this.focusedId);
    if (i < 0) this.clear();
    else this.index = i;
  }
}
