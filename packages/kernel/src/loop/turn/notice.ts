// A one-line notice in the frontends' top bar (a retry's wait, a compaction's progress,
// a vendor's warning): it replaces the previous one, and a headless run prints it on stderr.
import { Region, TextStyle } from "@pluggableharness/protocol/render";
import type { EventSink } from "../ports.ts";

export function publishNotice(
  sink: Pick<EventSink, "publish">,
  content: string,
  style = TextStyle.DIM,
): void {
  sink.publish({
    event: {
      case: "render",
      value: {
        content: {
          region: Region.TOP_BAR,
          replace: true,
          content: { root: { node: { case: "text", value: { content, style } } } },
        },
      },
    },
  });
}
