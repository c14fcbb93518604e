// Fails fast with a clear message when tests are started on an unsupported Node.
// `npm test` puts node_modules/.bin first on PATH, so this is the node@24 dev dependency.
const major = Number(process.versions.node.split(".")[0]);
if (major !== 24) {
  console.error(
    `PluggableHarness targets Node 24 LTS but this is Node ${process.versions.node}. ` +
      "Run the suite through npm (`npm test`), which uses the node@24 dev dependency.",
  );
  process.exit(1);
}
