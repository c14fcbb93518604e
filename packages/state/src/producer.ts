// Producer identities for the events the kernel writes itself.

import type { ProducerRef } from "@pluggableharness/protocol/common";
import type { HookError } from "@pluggableharness/protocol/hook";
import { CATEGORY_KERNEL } from "./codes.ts";
import { InvalidArgumentError } from "./errors.ts";

export const KERNEL_PRODUCER_NAME = "kernel";

/**
 * The producer of `message`, `plan` and `apply` events, which the kernel writes on its
 * own account: category KERNEL, name "kernel", version = the kernel package version.
 */
export function kernelProducer(kernelVersion: string): ProducerRef {
  if (typeof kernelVersion !== "string" || kernelVersion.length === 0) {
    throw new InvalidArgumentError("kernel version must be a non-empty string");
  }
  // A plain protobuf-es message literal (see meta.ts for why not create()).
  return {
    $typeName: "pluggableharness.common.v1.ProducerRef",
    name: KERNEL_PRODUCER_NAME,
    version: kernelVersion,
    source: "",
    category: CATEGORY_KERNEL,
    protocolVersion: 0,
  };
}

/**
 * The producer of a `hook_error` event: the failing subscriber itself (HookError.subscriber),
 * although the kernel writes the row — so replay and the manifest name the plugin at fault.
 */
export function hookErrorProducer(error: HookError): ProducerRef {
  const subscriber = error.subscriber;
  if (subscriber === undefined || subscriber.name === "" || subscriber.version === "") {
    throw new InvalidArgumentError(
      "HookError.subscriber must name the failing subscriber (name and version)",
    );
  }
  return subscriber;
}
