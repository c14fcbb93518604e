// Entry point of the kernel package. The domain core is also reachable on its own as
// "@pluggableharness/kernel/domain".
export * as domain from "./domain/index.ts";
