// The bubblewrap sandbox is shared with the kernel's plugin launcher (runtime/sandbox.ts).
export * from "@pluggableharness/runtime/sandbox";
