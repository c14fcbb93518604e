// The `agent` command's program: what bin/agent.mjs runs, from this source or from its
// prebuilt bundle.
import { discardPrelaunched } from "@pluggableharness/runtime/prelaunch";
import { EXIT } from "./exit-codes.ts";
import { main } from "./index.ts";
import { flushed, outputFailures, outputFailureText } from "./io.ts";

/** How long the process may linger once the command has finished and its output is out. */
const EXIT_GRACE_MS = 3_000;

// A write to our own output that fails (the reader closed the pipe, the disk is full) means
// output was lost: the exit status says so (1). A headless run listens and interrupts its
// session first; any other command ends here, quietly for a closed pipe (`… | head`).
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    outputFailures.note(err);
    if (outputFailures.handled) return;
    if (err.code !== "EPIPE" && stream !== process.stderr) {
      process.stderr.write(`agent: ${outputFailureText(err)}\n`);
    }
    process.exit(EXIT.ERROR);
  });
}

let code: number;
try {
  code = await main(process.argv);
} finally {
  // Plugin processes bin/agent.mjs prelaunched for this run wait for the kernel to adopt
  // them. A run that ended before its kernel started (a configuration error, a missing
  // key) never adopts them, and their pipes would keep this process alive for good.
  discardPrelaunched();
}
process.exitCode = outputFailures.failure ? EXIT.ERROR : code;

// Everything written reaches the reader before the process may end: a slow reader of a
// large answer is waited for (backpressure), never cut off by the timer below.
await flushed(process.stdout);
await flushed(process.stderr);
if (outputFailures.failure) process.exitCode = EXIT.ERROR;

// Last resort: once the command is done, nothing it left open may keep the process
// alive. The timer does not itself hold the process; it fires only if something else does.
setTimeout(() => {
  const open = process.getActiveResourcesInfo().filter((r) => r !== "Timeout");
  process.stderr.write(
    `agent: internal error: the command finished but ${open.length} resource(s) are still open (${[...new Set(open)].join(", ")}); exiting\n`,
  );
  process.exit();
}, EXIT_GRACE_MS).unref();
