import type { FaultScenario } from "../scenario.ts";
import { sessionScenarios } from "./sessions.ts";

// Every fault kind `npm run faults` runs, in table order. Add a scenario module and
// list it here.
export const scenarios: FaultScenario[] = [...sessionScenarios];
