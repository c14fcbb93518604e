// Evaluated before BullMQ (index.ts imports it first): msgpackr, a dependency of BullMQ,
// loads an optional native accelerator when one is installed; the project runs no native
// addons, and the pure-JavaScript path is what BullMQ's small job payloads need.
process.env["MSGPACKR_NATIVE_ACCELERATION_DISABLED"] ??= "true";
