// The `agent` command's program: what bin/agent.mjs runs, from this source or from its
// prebuilt bundle.
import { discardPrelaunched } from "@pluggableharness/runtime/prelaunch";
import { main } from "./index.ts";

/** How long the process may linger once the command has finished (flushing output). */
const EXIT_GRACE_MS = 3_000;

// A closed pipe (`agent sessions show … | head`) ends the command quietly.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw err;
  });
}

try {
  process.exitCode = await main(process.argv);
} finally {
  // Plugin processes bin/agent.mjs prelaunched for this run wait for the kernel to adopt
  // them. A run that ended before its kernel started (a configuration error, a missing
  // key) never adopts them, and their pipes would keep this process alive for good.
  discardPrelaunched();
}

// Last resort: once the command is done, nothing it left open may keep the process
// alive. The timer does not itself hold the process; it fires only if something else does.
setTimeout(() => {
  const open = process.getActiveResourcesInfo().filter((r) => r !== "Timeout");
  process.stderr.write(
    `agent: internal error: the command finished but ${open.length} resource(s) are still open (${[...new Set(open)].join(", ")}); exiting\n`,
  );
  process.exit();
}, EXIT_GRACE_MS).unref();
