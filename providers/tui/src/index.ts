// The terminal UI as a library: the agent CLI runs it in-process on its own
// terminal, and the plugin executable (main.ts) runs it over the Attach stream.
export {
  runTui,
  type SessionTarget,
  STARTING,
  Tui,
  type TuiInput,
  type TuiOptions,
  type TuiOutput,
  type TuiResult,
  TYPE_AHEAD,
} from "./app.ts";
export { attachOverGrpc } from "./attach.ts";
export type { ClientEventInit, FrontendConnection } from "./connection.ts";
export {
  brief,
  decisionName,
  formatTokens,
  formatUsd,
  isTerminal,
  kindName,
  riskName,
  scopeName,
  statusName,
} from "./describe.ts";
export { type Key, KeyDecoder } from "./keys.ts";
export { pendingConnection } from "./pending-connection.ts";
export { filterItems, type PickerItem, type PickerOptions, pick } from "./picker.ts";
export { type PaintOptions, paintNode, paintTree, treeText } from "./render-tree.ts";
export { type Frame, Screen, type TerminalOutput } from "./screen.ts";
export {
  ansiPainter,
  type Painter,
  painterFor,
  plainPainter,
  stripAnsi,
  visibleWidth,
  wrapLine,
} from "./style.ts";
