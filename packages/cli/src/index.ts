import { readFileSync } from "node:fs";
import { Command } from "commander";

const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
  version: string;
};

/** Builds the command tree. Subcommands arrive with their issues; `run` is the main job. */
export function buildProgram(): Command {
  const program = new Command("agent")
    .description("PluggableHarness: a Terraform-style, plugin-based coding agent")
    .version(pkg.version, "-v, --version");
  program
    .command("run")
    .description("start a session (interactive, or headless with -p)")
    .option("-p, --print <prompt>", "run headless with this prompt")
    .action(() => {
      process.stderr.write("agent run: the session loop is not implemented yet in this build.\n");
      process.exitCode = 2;
    });
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram().exitOverride();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    const code = (err as { exitCode?: number }).exitCode;
    return typeof code === "number" ? code : 1;
  }
  return typeof process.exitCode === "number" ? process.exitCode : 0;
}
