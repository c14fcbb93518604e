// The project runs no native addons: loading the fleet (and BullMQ with it) must not load
// msgpackr's optional native accelerator, which npm installs where a prebuilt one exists.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const INDEX = fileURLToPath(new URL("../src/index.ts", import.meta.url));

describe("the fleet's dependencies", () => {
  it("load no native addon (Linux: nothing of msgpackr-extract in the process's mappings)", () => {
    const env = { ...process.env };
    delete env["MSGPACKR_NATIVE_ACCELERATION_DISABLED"];
    const out = execFileSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `await import(${JSON.stringify(INDEX)}); const { readFileSync } = await import("node:fs"); console.log(readFileSync("/proc/self/maps", "utf8").split("\\n").filter((l) => l.endsWith(".node")).join("\\n"));`,
      ],
      { encoding: "utf8", env },
    );
    expect(out.trim()).toBe("");
  });
});
