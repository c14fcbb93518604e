// `agent sessions show`: the transcript straight from the session file, every event
// through the kernel's generic renderer; no plugin is started. It loads only the session
// reader, the generic renderer (`@pluggableharness/kernel/render`) and the plain-text
// painter, never the kernel, so it starts fast.
import { genericRenderTree } from "@pluggableharness/kernel/render";
import { treeText } from "@pluggableharness/provider-tui/render-tree";
import {
  isSessionId,
  openSessionReader,
  SessionNotFoundError,
  type SessionReader,
} from "@pluggableharness/state";
import { EXIT } from "../exit-codes.ts";
import { CliError, CoalescingWriter, type Io } from "../io.ts";

export function openReader(id: string): SessionReader {
  if (!isSessionId(id)) throw new CliError(`agent: "${id}" is not a session id`, EXIT.USAGE);
  try {
    return openSessionReader(id, { log: () => {} });
  } catch (err) {
    if (err instanceof SessionNotFoundError) throw new CliError(`agent: no session ${id}`, EXIT.ERROR);
    throw new CliError(`agent: ${(err as Error).message}`, EXIT.ERROR);
  }
}

/** Prints the transcript of a session file with the kernel's generic renderer. */
export async function runShow(io: Io, id: string, opts: { expand?: boolean }): Promise<number> {
  const reader = openReader(id);
  const out = new CoalescingWriter(io.out);
  try {
    let n = 0;
    for (const e of reader.events()) {
      // Like a live or replayed session: an event with nothing to show (a message of tool
      // results only) prints nothing, so each call appears once, by its own events.
      const tree = genericRenderTree(e);
      if (!tree.root) continue;
      out.write(`${n++ > 0 ? "\n" : ""}${treeText(tree, { expand: !!opts.expand })}\n`);
    }
    return EXIT.OK;
  } finally {
    out.close();
    reader.close();
  }
}
