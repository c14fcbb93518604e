// The kernel's domain core: the pure, IO-free rules of the tool and model provider data
// types. Nothing here talks to a process, a socket, a file or the clock.
export * from "./accumulator.ts";
export * from "./cache-breakpoints.ts";
export * from "./canonical-json.ts";
export * from "./capabilities.ts";
export * from "./content-checks.ts";
export * from "./cost.ts";
export * from "./decimal.ts";
export * from "./done.ts";
export * from "./errors.ts";
export * from "./generation-params.ts";
export * from "./ids.ts";
export * from "./invoke-stream.ts";
export * from "./json-depth.ts";
export * from "./json-schema.ts";
export * from "./model-errors.ts";
export * from "./payload-validation.ts";
export * from "./pricing.ts";
export * from "./render-budget.ts";
export * from "./request-checks.ts";
export * from "./routing.ts";
export * from "./scheduler.ts";
export * from "./time.ts";
export * from "./tokens.ts";
export * from "./tool-errors.ts";
export * from "./tool-result-text.ts";
export * from "./tool-schema.ts";
