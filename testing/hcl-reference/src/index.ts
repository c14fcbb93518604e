// The differential test's machinery; see README.md.
export { ALLOWLIST, type AllowlistEntry, explain } from "./allowlist.ts";
export { compareResults, type Disagreement } from "./compare.ts";
export {
  type CorpusInput,
  fixtureInputs,
  identifierInputs,
  STANDARD_ENV,
  STANDARD_VARIABLES,
  specInputs,
  upstreamInputs,
} from "./corpus.ts";
export { generateInputs } from "./generate.ts";
export { ours } from "./ours.ts";
export { buildReference, findToolchain, runReference } from "./reference.ts";
export { type DifferentialReport, runDifferential } from "./run.ts";
