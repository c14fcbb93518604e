#!/usr/bin/env node
// The `agent` executable. It only checks the Node version, in syntax every Node that runs
// ES modules can parse and with no import of its own, so an older Node prints what it
// needs instead of failing on a newer API (Node 20 lacks exports start.mjs imports). Then
// start.mjs does the work.
var major = Number(String(process.versions.node).split(".")[0]);
if (!(major >= 24)) {
  process.stderr.write(
    "agent: needs Node.js 24 or newer; this is Node.js " +
      process.versions.node +
      " (" +
      process.execPath +
      "). Install Node 24 (https://nodejs.org) and put it first on PATH.\n",
  );
  process.exit(1);
}
import("./start.mjs");
