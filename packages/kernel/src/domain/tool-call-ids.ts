// ToolCall.id is the kernel's (seed: tool data types, ToolCall); the vendor's id of a call
// is what the vendor wants back. The accumulator gives each tool_use block a kernel id and
// keeps the vendor's as vendor_id; `withVendorToolCallIds` is the other direction, applied to
// the messages of every request as it leaves for a model provider.
import { create } from "@bufbuild/protobuf";
import {
  type ContentBlock,
  ContentBlockSchema,
  type Message,
  MessageSchema,
} from "@pluggableharness/protocol/content";

/**
 * The messages as a vendor must see them: each tool_use block carries its vendor_id as its
 * id, and each tool_result the id of the tool_use it answers. Blocks without a vendor_id
 * (kernel-made calls, sessions written before kernel ids) keep their id. Messages without
 * a change are returned as they are; nothing is modified in place.
 */
export function withVendorToolCallIds(messages: readonly Message[]): Message[] {
  const vendorOf = new Map<string, string>();
  for (const m of messages) {
    for (const b of m.content) {
      if (b.block.case === "toolUse" && b.block.value.vendorId)
        vendorOf.set(b.block.value.id, b.block.value.vendorId);
    }
  }
  if (vendorOf.size === 0) return [...messages];
  return messages.map((m) => {
    let changed = false;
    const content = m.content.map((b) => {
      const out = vendorBlock(b, vendorOf);
      if (out !== b) changed = true;
      return out;
    });
    return changed ? create(MessageSchema, { ...m, content }) : m;
  });
}

function vendorBlock(b: ContentBlock, vendorOf: ReadonlyMap<string, string>): ContentBlock {
  const v = b.block;
  if (v.case === "toolUse" && v.value.vendorId) {
    return create(ContentBlockSchema, {
      ...b,
      block: { case: "toolUse", value: { ...v.value, id: v.value.vendorId, vendorId: "" } },
    });
  }
  if (v.case === "toolResult") {
    const vendorId = vendorOf.get(v.value.toolUseId);
    if (vendorId !== undefined) {
      return create(ContentBlockSchema, {
        ...b,
        block: { case: "toolResult", value: { ...v.value, toolUseId: vendorId } },
      });
    }
  }
  return b;
}
