// The `agent` command's program: what bin/agent.mjs runs, from this source or from its
// prebuilt bundle.
import { main } from "./index.ts";

// A closed pipe (`agent sessions show … | head`) ends the command quietly.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw err;
  });
}

process.exitCode = await main(process.argv);
