// The real MCP servers the tests run, installed from npm as devDependencies.
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
const dir = (pkg: string) => dirname(require.resolve(`${pkg}/package.json`));

/** @modelcontextprotocol/server-everything: tools, resources, progress, structured content. */
export const EVERYTHING = join(dir("@modelcontextprotocol/server-everything"), "dist", "index.js");
/** @modelcontextprotocol/server-filesystem: file tools confined to the directories it is given. */
export const FILESYSTEM = join(dir("@modelcontextprotocol/server-filesystem"), "dist", "index.js");
