// `agent conform <plugin> …`: the conformance library's own command line.
import type { Io } from "../io.ts";

export async function runConform(io: Io, args: readonly string[]): Promise<number> {
  const { main } = await import("@pluggableharness/conformance/cli");
  return main(args, {
    out: (l) => io.out.write(`${l}\n`),
    err: (l) => io.err.write(`${l}\n`),
  });
}
