// Producer identities for the events the kernel writes itself.

import { create } from "@bufbuild/protobuf";
import { PluginCategory, type ProducerRef, ProducerRefSchema } from "@pluggableharness/protocol/common";
import type { HookError } from "@pluggableharness/protocol/hook";
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
  return create(ProducerRefSchema, {
    category: PluginCategory.KERNEL,
    name: KERNEL_PRODUCER_NAME,
    version: kernelVersion,
  });
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
