// The category services discovery probes by default, one per plugin category plus
// the shared hook subscriber service. Each has a Describe RPC.
import { ContextService } from "@pluggableharness/protocol/context";
import { FrontendService } from "@pluggableharness/protocol/frontend";
import { HookSubscriberService } from "@pluggableharness/protocol/hook";
import { MemoryService } from "@pluggableharness/protocol/memory";
import { ModelService } from "@pluggableharness/protocol/model";
import { ToolService } from "@pluggableharness/protocol/tool";
import { WidgetService } from "@pluggableharness/protocol/widget";
import type { CategoryProbe } from "./plugin-types.ts";

export const CATEGORY_PROBES: readonly CategoryProbe[] = [
  { category: "model", service: ModelService },
  { category: "tool", service: ToolService },
  { category: "context", service: ContextService },
  { category: "memory", service: MemoryService },
  { category: "frontend", service: FrontendService },
  { category: "widget", service: WidgetService },
  { category: "hook", service: HookSubscriberService },
];
