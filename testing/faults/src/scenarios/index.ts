import type { FaultScenario } from "../scenario.ts";
import { agentKilledWithBackground, agentKilledWithTree, pluginKilledWithTree } from "./orphans.ts";
import { sessionScenarios } from "./sessions.ts";
import { startupErrorAfterPrelaunch } from "./startup.ts";
import { vendorFaults } from "./vendors.ts";

// Every fault kind `npm run faults` runs, in table order. Add a scenario module and
// list it here.
export const scenarios: FaultScenario[] = [
  ...sessionScenarios,
  startupErrorAfterPrelaunch,
  ...vendorFaults,
  pluginKilledWithTree,
  agentKilledWithTree,
  agentKilledWithBackground,
];
