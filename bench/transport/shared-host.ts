// Option (b) of the transport benchmark: one Node process that imports every first-party
// plugin it is given. Each plugin's serve() binds its own socket and prints its own
// handshake line, in import order; they share the process, its heap and its event loop.
import { pathToFileURL } from "node:url";

for (const entry of process.argv.slice(2)) await import(pathToFileURL(entry).href);
