// What the crash-test child writes for event `index`, shared with the verifying test.

import { PluginCategory } from "@pluggableharness/protocol/common";
import type { ProducerIdentity } from "../src/index.ts";

/** Sizes vary from a few bytes to past one 4 KiB page, so some payloads spill to overflow pages. */
export function crashPayload(index: number): Uint8Array {
  const size = 1 + ((index * 7919) % 6000);
  const bytes = new Uint8Array(size);
  let x = (index ^ 0x9e3779b9) >>> 0;
  for (let k = 0; k < size; k++) {
    x = (x * 1103515245 + 12345) >>> 0;
    bytes[k] = x >>> 24;
  }
  return bytes;
}

export function toolProducer(index: number): ProducerIdentity {
  return { category: PluginCategory.TOOL, name: "fs", version: `1.${index % 3}.0` };
}
