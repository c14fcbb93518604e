export * from "./conformance.ts";
export * from "./harness.ts";
