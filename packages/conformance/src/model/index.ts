// Model-provider conformance checks live here (added by the model-provider work).
// Export a CategoryChecks function as `modelChecks` and register it in ../index.ts
// under "model"; ConformanceOptions.model carries the model id to exercise.
export {};
