// The kernel's own version: the producer version of every event it writes itself.
import { readFileSync } from "node:fs";

const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
  version: string;
};

export const KERNEL_VERSION: string = pkg.version;
