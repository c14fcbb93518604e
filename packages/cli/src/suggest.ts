// The "did you mean" helper lives with the configuration, whose errors use it too.
export { closest, distance } from "@pluggableharness/config";
