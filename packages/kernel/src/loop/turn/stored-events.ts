// How the gate writes a call's large inputs: once, in the assistant message; the tool_call
// and plan events leave them out and say so. The reading side, which puts them back, is
// frontends/stored-inputs.ts; this half lives in the loop so the gate needs no frontend module.
import { create, type JsonObject } from "@bufbuild/protobuf";
import {
  type PlanEvent,
  PlanEventSchema,
  type ToolCallEvent,
  ToolCallEventSchema,
} from "@pluggableharness/protocol/event";

/** Inputs whose JSON is longer than this are stored only in the assistant message. */
export const LARGE_INPUT_BYTES = 1024;

export function isLargeInput(input: JsonObject | undefined): boolean {
  return input !== undefined && JSON.stringify(input).length > LARGE_INPUT_BYTES;
}

/** The tool_call event as stored: without its arguments when they are large. */
export function storedToolCallEvent(event: ToolCallEvent): ToolCallEvent {
  if (!event.call || !isLargeInput(event.call.arguments)) return event;
  return create(ToolCallEventSchema, {
    ...event,
    call: { ...event.call, arguments: {} },
    argumentsInMessage: true,
  });
}

/** The plan event as stored: items without their input when it is large. */
export function storedPlanEvent(event: PlanEvent): PlanEvent {
  const plan = event.plan;
  if (!plan) return event;
  const large = plan.items.filter((i) => isLargeInput(i.input)).map((i) => i.toolCallId);
  if (large.length === 0) return event;
  return create(PlanEventSchema, {
    plan: {
      ...plan,
      items: plan.items.map((i) => (large.includes(i.toolCallId) ? { ...i, input: {} } : i)),
    },
    inputsInMessage: large,
  });
}
