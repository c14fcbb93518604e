// Trace events: the kernel's instrumentation of every RunTurn step, model call, tool
// execution and hook dispatch. A span exporter can be built on top; tests use the
// sequence to check the turn algorithm's order.

export interface TraceEvent {
  /** e.g. "turn.begin", "step", "hook.dispatch", "hook.subscriber", "model.attempt". */
  readonly name: string;
  readonly sessionId: string;
  readonly turnId?: string;
  /** For name "step": the RunTurn step ("1", "2", ..., "9b", "18"). */
  readonly step?: string;
  readonly attrs?: Readonly<Record<string, string | number | boolean>>;
}

export type Tracer = (event: TraceEvent) => void;

export const noTrace: Tracer = () => {};
