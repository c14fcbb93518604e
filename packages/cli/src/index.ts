// The `agent` command tree. Each command's module is imported only when it runs, so
// `agent --version` or `agent sessions list` start without loading the kernel.
import { readFileSync } from "node:fs";
import { Command, CommanderError, Option } from "commander";
import { EXIT, EXIT_CODE_HELP } from "./exit-codes.ts";
import { CliError, type Io, processIo } from "./io.ts";
import { RunSignals, takeEarlySignals } from "./signals.ts";

const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
  version: string;
};

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** Builds the command tree; `finish` receives each command's exit status. */
export function buildProgram(io: Io, finish: (code: number) => void): Command {
  const program = new Command("agent")
    .description("PluggableHarness: a plugin-based coding agent. Start with `agent run`.")
    .version(pkg.version, "-v, --version", "print the version")
    .configureOutput({
      writeOut: (s) => io.out.write(s),
      writeErr: (s) => io.err.write(s),
    })
    .showSuggestionAfterError(true);

  program
    .command("run [message]")
    .description(
      "start a session: interactive in a terminal (optionally with a first message), headless with -p or a prompt on stdin",
    )
    .option(
      "-p, --print [prompt]",
      "run headless with this prompt (stdin, when piped, is appended; -p alone reads the prompt from stdin)",
    )
    .option("--profile <name>", 'agent profile from agent.hcl (default: "default")')
    .option("--model <provider/id>", "use this model as the profile's primary model")
    .option("--max-turns <n>", "end the session after this many turns")
    .option("--max-budget-usd <usd>", "end the session once it has cost this much")
    .option("--max-wall-clock <duration>", "end the session after this long (90, 90s, 15m, 2h)")
    .option(
      "--compact-at <tokens|percent>",
      "compact the conversation once a request reaches this size (60%, or 120000 tokens)",
    )
    .option("--plan", "plan mode: the model sees no tools that change anything")
    .option(
      "--image <file>",
      "headless: send this image with the prompt (repeatable; vision models only)",
      collect,
    )
    .option(
      "--resume [session-id]",
      "continue a session (an id or unique prefix); without one, choose from this directory's",
    )
    .option("-c, --continue", "continue the most recent session of this directory")
    .addOption(
      new Option("--output-format <format>", "headless output")
        .choices(["text", "json", "stream-json"])
        .default("text"),
    )
    .addOption(
      new Option(
        "--headless-ask <answer>",
        "what a permission prompt becomes when nobody can answer it (headless): deny, or allow",
      )
        .choices(["deny", "allow"])
        .default("deny"),
    )
    .option(
      "--verbose",
      "text output: print the whole transcript, not only the final answer; all runs: show each context provider's contribution",
    )
    .option(
      "--detach",
      "start the session under agent serve (started in the background if needed), print its id and return",
    )
    .addHelpText(
      "after",
      `
Headless output (-p): text prints the final answer; json prints one result record;
stream-json prints one JSON object per line (init, message deltas, tool calls and
results, plan decisions with the deciding rule, usage, and the final result).

${EXIT_CODE_HELP}

Without an agent.hcl, a built-in profile uses the first vendor key found in the
environment (ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY or GOOGLE_API_KEY,
XAI_API_KEY, or OPENAI_BASE_URL with OPENAI_MODEL).`,
    )
    .action(async (message: string | undefined, opts) => {
      // A headless run owns Ctrl-C before anything loads: start-up takes seconds, and a
      // signal during it must still end in a result record (exit 4), not a killed process.
      const headless = opts.print !== undefined || !process.stdin.isTTY;
      const signals = headless ? new RunSignals() : undefined;
      // An interactive start interrupted already ends as an uncaught Ctrl-C would.
      if (!headless && takeEarlySignals() > 0) process.exit(130);
      const { runRun } = await import("./commands/run.ts");
      finish(
        await runRun(
          io,
          { ...opts, ...(message !== undefined ? { message } : {}) },
          {
            stdin: process.stdin,
            ...(signals ? { signals } : {}),
          },
        ),
      );
    });

  program
    .command("serve")
    .description(
      "run this project's sessions in a background kernel that frontends attach to (unix socket; --tcp, --web)",
    )
    .option(
      "--tcp [port]",
      "also listen on loopback TCP (any free port without one); calls need the printed token",
    )
    .option(
      "--web [port]",
      "also serve the web UI on loopback (any free port without one); the printed address carries its token",
    )
    .addOption(
      new Option("--ask <answer>", "what a permission request becomes while no frontend is attached")
        .choices(["wait", "deny", "allow"])
        .default("wait"),
    )
    .option("--background", "start the server detached and return once it listens")
    .option("--status", "show this project's server, if one runs")
    .option("--stop", "stop this project's server")
    .action(async (opts) => {
      const { runServe } = await import("./commands/serve.ts");
      finish(await runServe(io, opts));
    });

  program
    .command("attach [session-id]")
    .description(
      "a terminal UI on a session agent serve hosts (backfill, live stream, approvals); leaving only detaches",
    )
    .option("--web", "print the web UI's address for the session instead")
    .option(
      "--tcp <host:port>",
      "attach over the server's loopback TCP endpoint (token in AGENT_SERVE_TOKEN)",
    )
    .action(async (session: string | undefined, opts) => {
      const { runAttach } = await import("./commands/attach.ts");
      finish(await runAttach(io, session, opts));
    });

  program
    .command("init")
    .description(
      "write a commented agent.hcl for the vendor keys in the environment (an existing one is kept), then install its providers and write .agent/agent.lock.hcl",
    )
    .option("--force", "overwrite an existing agent.hcl")
    .option("-C, --dir <dir>", "project directory (default: the current one)")
    .action(async (opts) => {
      const { runInit } = await import("./commands/init.ts");
      finish(await runInit(io, opts));
    });

  const batch = program
    .command("batch")
    .description("fleet mode: run one prompt over many targets on `agent worker`s (settings.fleet)");
  batch
    .command("submit")
    .description("queue a batch: a prompt (template) x targets; prints the batch id")
    .option("-p, --prompt <prompt>", "the prompt; {{target}} and a JSONL line's fields fill {{name}}")
    .option("--prompt-file <file>", "read the prompt from a file")
    .option(
      "--target <path|git-url[#ref]>",
      "a target: a local directory (copied) or a git repository at a ref (repeatable)",
      collect,
    )
    .option("--targets <file>", "targets, one per line")
    .option("--jsonl <file>", 'one task per line: {"target": …, "ref"?: …, other fields: template variables}')
    .option("--profile <name>", 'agent profile from agent.hcl (default: "default")')
    .option("--task-budget-usd <usd>", "each task's session ends once it has cost this much")
    .option(
      "--budget-usd <usd>",
      "the whole batch's budget: no task starts that it cannot cover, running ones stop at it",
    )
    .addOption(
      new Option(
        "--headless-ask <rule>",
        "how a call the policy would ask about resolves (nobody is there to answer)",
      )
        .choices(["deny", "allow"])
        .default("deny"),
    )
    .option("--concurrency <n>", "at most this many of the batch's tasks run at once, fleet-wide")
    .option("--max-attempts <n>", "a task that crashes is tried this many times, then fails (default 3)")
    .option("--json", "print {batch_id, tasks}")
    .action(async (opts) => {
      const { runSubmit } = await import("./commands/batch.ts");
      finish(await runSubmit(io, opts));
    });
  batch
    .command("status <batch-id>")
    .description("progress, per-status counts, spend and ETA (from any machine)")
    .option("--json", "print JSON")
    .option("--watch", "refresh every 2 s until the batch is finished")
    .action(async (id: string, opts) => {
      const { runStatus } = await import("./commands/batch.ts");
      finish(await runStatus(io, id, opts));
    });
  batch
    .command("results <batch-id>")
    .description("per task: status, exit code, final message, cost, tokens and the diff it produced")
    .addOption(new Option("--format <format>", "output format").choices(["jsonl", "md"]).default("jsonl"))
    .action(async (id: string, opts) => {
      const { runResults } = await import("./commands/batch.ts");
      finish(await runResults(io, id, opts));
    });
  batch
    .command("cancel <batch-id>")
    .description("no task of the batch starts any more; running ones are interrupted")
    .action(async (id: string) => {
      const { runCancel } = await import("./commands/batch.ts");
      finish(await runCancel(io, id));
    });
  batch
    .command("retry <batch-id>")
    .description("queue a batch's finished tasks again, with fresh sessions")
    .option("--failed", "the failed tasks")
    .option("--status <status>", "the tasks in this final status (repeatable)", collect)
    .action(async (id: string, opts) => {
      const { runRetry } = await import("./commands/batch.ts");
      finish(await runRetry(io, id, opts));
    });
  program
    .command("worker")
    .description("run fleet tasks on this machine until SIGTERM (once: drain; twice: hand back)")
    .option("--concurrency <n>", "tasks run at once (default 1)")
    .option(
      "--work-dir <dir>",
      "checkouts and session files while tasks run (the same path on every machine)",
    )
    .option("--lock-ms <ms>", "a dead worker's task is handed on after this long (default 30000)")
    .option("--stalled-check-ms <ms>", "how often to look for dead workers' tasks (default 30000)")
    .action(async (opts) => {
      const { runWorker } = await import("./commands/worker.ts");
      finish(await runWorker(io, opts));
    });

  const sessions = program.command("sessions").description("list, show, replay and prune recorded sessions");
  sessions
    .command("list")
    .description(
      "sessions, newest first, each sub-agent under the session that spawned it: id, start time, directory, model, status, cost, title",
    )
    .option("--status <status>", "only sessions in this status (repeatable)", collect)
    .option("--roots", "only root sessions (no sub-agents)")
    .option("--limit <n>", "at most this many")
    .option("--json", "print JSON")
    .option("--batch <batch-id>", "the sessions of a fleet batch, from its catalog")
    .action(async (opts) => {
      if (opts.batch) await (await import("./commands/batch.ts")).useBatchSessions(io, opts.batch);
      const { runList } = await import("./commands/sessions.ts");
      finish(runList(io, opts));
    });
  sessions
    .command("show <session-id>")
    .description("print a session's transcript from its file, then its sub-agents' (no plugin is started)")
    .option("--expand", "show collapsed parts (thinking, tool output) in full")
    .option("--no-children", "leave out the sub-agents' transcripts")
    .option("--batch <batch-id>", "a session of a fleet batch, from its catalog")
    .action(async (id: string, opts) => {
      if (opts.batch) await (await import("./commands/batch.ts")).useBatchSessions(io, opts.batch);
      const { runShow } = await import("./commands/show.ts");
      finish(await runShow(io, id, opts));
    });
  sessions
    .command("rewind <session-id>")
    .description(
      "fork a session before one of its prompts and restore the files its later turns changed (lists the prompts without --to)",
    )
    .option("--to <message-id>", "the prompt to rewind to: the fork ends just before it")
    .option("--yes", "proceed without asking (needed without a terminal)")
    .action(async (id: string, opts) => {
      const { runRewind } = await import("./commands/rewind.ts");
      finish(await runRewind(io, id, { ...opts, stdin: process.stdin }));
    });
  sessions
    .command("replay <session-id>")
    .description("re-render a session, then its sub-agents, through the plugins that produced them")
    .option("--expand", "show collapsed parts in full")
    .option("--verbose", "also each context provider's contribution, as `agent run --verbose` shows them")
    .option("--no-children", "leave out the sub-agents")
    .option("--batch <batch-id>", "a session of a fleet batch, from its catalog")
    .action(async (id: string, opts) => {
      if (opts.batch) await (await import("./commands/batch.ts")).useBatchSessions(io, opts.batch);
      const { runReplay } = await import("./commands/replay.ts");
      finish(await runReplay(io, id, opts));
    });
  sessions
    .command("prune [session-ids...]")
    .description("delete session files: the ids named, and/or those matching every selector given")
    .option("--older-than <duration>", "sessions started longer ago than this (e.g. 30d)")
    .option("--status <status>", "sessions in this status (repeatable)", collect)
    .option("--include-running", "also delete matching sessions still marked running")
    .option("--include-corrupt", "also delete the .corrupt copies kept after a salvage")
    .option("--dry-run", "only say what would be deleted")
    .action(async (ids: string[], opts) => {
      const { runPrune } = await import("./commands/sessions.ts");
      finish(runPrune(io, ids, opts));
    });

  const memory = program
    .command("memory")
    .description(
      "audit what the memory providers hold: list, show, approve or reject drafts, forget records",
    );
  for (const [action, args, what] of [
    ["list", "", "records of this project and global ones, drafts awaiting approval first"],
    ["show", " <id>", "one record: its type, scope, status, provenance, links and text"],
    ["approve", " <id>", "make a pending draft part of what recall shows"],
    ["reject", " <id>", "discard a pending draft"],
    ["forget", " <id>", "delete a record"],
  ] as const) {
    const cmd = memory
      .command(`${action}${args}`)
      .description(what)
      .option("--provider <name>", "the memory provider (default: every loaded one)");
    if (action === "list") cmd.option("--pending", "only drafts awaiting approval");
    if (action === "list" || action === "show") cmd.option("--json", "machine-readable output");
    cmd.action(async (...a: unknown[]) => {
      const id = action === "list" ? undefined : (a[0] as string);
      const opts = (action === "list" ? a[0] : a[1]) as import("./commands/memory.ts").MemoryOptions;
      const { runMemory } = await import("./commands/memory.ts");
      finish(await runMemory(io, action, id, opts));
    });
  }

  const providers = program
    .command("providers")
    .description(
      "the providers this project uses (identity, category, tools or models, health); lock, upgrade and prune them",
    )
    .option("-C, --dir <dir>", "project directory (default: the current one)")
    .option("--json", "print JSON")
    .option("--check", "launch every provider and check its health, even one described from the cache")
    .action(async (opts) => {
      const { runProviders } = await import("./commands/providers.ts");
      finish(await runProviders(io, opts));
    });
  providers
    .command("lock")
    .description(
      "resolve every required_providers entry and write .agent/agent.lock.hcl: locked versions are kept, new providers added, and every platform's checksum recorded",
    )
    .option("-C, --dir <dir>", "project directory (default: the current one)")
    .action(async (opts) => {
      const { runLock } = await import("./commands/lock.ts");
      finish(await runLock(io, "lock", [], opts));
    });
  providers
    .command("upgrade [names...]")
    .description("move the lock to the newest release each constraint allows (all providers, or those named)")
    .option("-C, --dir <dir>", "project directory (default: the current one)")
    .action(async (names: string[], opts) => {
      const { runLock } = await import("./commands/lock.ts");
      finish(await runLock(io, "upgrade", names, opts));
    });
  providers
    .command("prune")
    .description(
      "delete downloaded provider builds nothing needs: builds this project's lock pins, and builds a retained session was written by, are kept",
    )
    .option("-C, --dir <dir>", "project directory whose lock file to honour (default: the current one)")
    .option(
      "--force",
      "also delete builds that retained sessions were written by (replaying those sessions then fails)",
    )
    .option("--dry-run", "only say what would be deleted")
    .action(async (opts) => {
      const { runProvidersPrune } = await import("./commands/prune.ts");
      finish(runProvidersPrune(io, opts));
    });

  program
    .command("validate [dir]")
    .description("check agent.hcl, the global config and every provider block against its plugin's schema")
    .addHelpText("after", "\nExit status: 0 valid, 1 invalid.")
    .action(async (dir: string | undefined) => {
      const { runValidate } = await import("./commands/validate.ts");
      finish(await runValidate(io, dir));
    });

  program
    .command("doctor")
    .description("check the sandbox, protected paths, bash environment and policy layers on this machine")
    .option("-C, --dir <dir>", "project directory (default: the current one)")
    .option("--json", "print JSON")
    .addHelpText(
      "after",
      "\nExit status: 0 fine, 1 when a required sandbox cannot run or the configuration is invalid.",
    )
    .action(async (opts) => {
      const { runDoctor } = await import("./commands/doctor.ts");
      finish(runDoctor(io, opts));
    });

  program
    .command("add <provider>")
    .description(
      "add a provider to agent.hcl: its required_providers entry, its block with every option commented, and its tools in the profiles",
    )
    .option("--name <name>", "local name for a provider from a forge (default: its repository's name)")
    .option("-C, --dir <dir>", "project directory (default: the one agent.hcl is found in)")
    .addHelpText(
      "after",
      `
Examples:
  agent add git                                  a first-party provider, by name
  agent add github.com/acme/provider-jira        a provider released on GitHub (or gitlab.com/...)

MCP servers are added with \`agent mcp add\`.`,
    )
    .action(async (provider: string, opts) => {
      const { runAdd } = await import("./commands/add.ts");
      finish(await runAdd(io, provider, opts));
    });

  const mcp = program
    .command("mcp")
    .description("MCP servers: add, list and remove them in agent.hcl; serve this project's tools over MCP");
  mcp
    .command("add <name> [target...]")
    .description(
      "add an MCP server: `agent mcp add <name> -- <command> [args...]` or `agent mcp add <name> <url>`",
    )
    .option(
      "-t, --transport <transport>",
      "stdio (a command), http (Streamable HTTP) or sse; default from the target",
    )
    .option(
      "-e, --env <NAME[=value]>",
      "a variable for a local server; NAME alone reads $NAME via env() (repeatable)",
      collect,
    )
    .option(
      "-H, --header <'Name: value'>",
      "an HTTP header for a remote server; 'Name: $env:VAR' reads $VAR (repeatable)",
      collect,
    )
    .option("--bearer-token-env-var <VAR>", "send Authorization: Bearer $VAR to a remote server")
    .option("--trust-read-only-hint", "let tools the server marks read-only run without asking")
    .option("--network", "let a sandboxed local server use the network")
    .option("--sandbox <mode>", "required, best_effort (default) or off")
    .option("--cwd <dir>", "working directory of a local server")
    .option("-C, --dir <dir>", "project directory (default: the current one)")
    .option("--no-check", "do not start the server to check it")
    .addHelpText(
      "after",
      `
Examples:
  agent mcp add files -- npx -y @modelcontextprotocol/server-filesystem .
  agent mcp add github -e GITHUB_PERSONAL_ACCESS_TOKEN --network -- npx -y @modelcontextprotocol/server-github
  agent mcp add docs https://example.com/mcp --bearer-token-env-var DOCS_TOKEN

Secrets are never written into agent.hcl: -e NAME writes env("NAME"), read when the agent starts.`,
    )
    .action(async (name: string, target: string[], opts) => {
      const { runMcpAdd } = await import("./commands/mcp.ts");
      finish(await runMcpAdd(io, name, target, opts));
    });
  mcp
    .command("list")
    .description(
      "the MCP servers in agent.hcl, each started to show whether it connects and how many tools it has",
    )
    .option("--no-check", "do not start the servers")
    .option("--json", "print JSON")
    .option("-C, --dir <dir>", "project directory (default: the current one)")
    .action(async (opts) => {
      const { runMcpList } = await import("./commands/mcp.ts");
      finish(await runMcpList(io, opts));
    });
  mcp
    .command("remove <name>")
    .description("remove an MCP server from agent.hcl (its block and its profile entries)")
    .option("-C, --dir <dir>", "project directory (default: the current one)")
    .action(async (name: string, opts) => {
      const { runMcpRemove } = await import("./commands/mcp.ts");
      finish(runMcpRemove(io, name, opts));
    });
  mcp
    .command("serve")
    .description(
      "serve this project's tools as an MCP server over stdio; every call goes through policy and the plan/apply gate",
    )
    .option("--profile <name>", 'agent profile whose tools are served (default: "default")')
    .addOption(
      new Option(
        "--ask <answer>",
        "what a call the policy asks about becomes (nobody can answer over MCP): deny or allow",
      )
        .choices(["deny", "allow"])
        .default("deny"),
    )
    .option("-C, --dir <dir>", "project directory (default: the current one)")
    .action(async (opts) => {
      const { runMcpServe } = await import("./commands/mcp-serve.ts");
      finish(await runMcpServe(io, opts));
    });

  const plugin = program
    .command("plugin")
    .description("write and build plugins: `agent plugin new`, `agent plugin build`");
  plugin
    .command("new <name>")
    .description("scaffold a TypeScript plugin that builds, passes `agent conform` and can be published")
    .addOption(
      new Option("--category <category>", "what it provides")
        .choices(["tool", "model", "context", "memory", "hook", "frontend", "widget", "slash-command"])
        .default("tool"),
    )
    .option("-C, --dir <dir>", "where to create it (default: ./<name>)")
    .option("--source <address>", "the forge address it will be published at (github.com/<owner>/<name>)")
    .action(async (name: string, opts) => {
      const { runPluginNew } = await import("./commands/plugin.ts");
      finish(runPluginNew(io, name, opts));
    });
  plugin
    .command("build [dir]")
    .description(
      "bundle the plugin into release assets: dist/release/<name>_<version>_<os>_<arch>.tar.gz per platform and the checksum file, plus dist/dev/<name>",
    )
    .option("-o, --out <dir>", "output directory (default: <dir>/dist)")
    .option(
      "--platform <os_arch>",
      "a platform to publish (repeatable; default linux/darwin × amd64/arm64)",
      collect,
    )
    .option("--dev", "only the unpacked build in dist/dev (for dev_overrides and agent conform)")
    .action(async (dir: string | undefined, opts) => {
      const { runPluginBuild } = await import("./commands/plugin.ts");
      finish(await runPluginBuild(io, dir, opts));
    });

  program
    .command("conform")
    .description("check a plugin executable against its category's protocol (`agent conform --help`)")
    .helpOption(false)
    .allowUnknownOption(true)
    .allowExcessArguments(true)
    .argument("[args...]")
    .action(async (args: string[]) => {
      const { runConform } = await import("./commands/conform.ts");
      finish(await runConform(io, args));
    });

  program
    .command("completion <shell>")
    .description("print a shell completion script: bash, zsh or fish")
    .addHelpText(
      "after",
      `
Install it once, e.g.:
  agent completion bash > ~/.local/share/bash-completion/completions/agent
  agent completion zsh > "\${fpath[1]}/_agent"
  agent completion fish > ~/.config/fish/completions/agent.fish`,
    )
    .action(async (shell: string) => {
      const { runCompletion } = await import("./commands/completion.ts");
      finish(runCompletion(io, program, shell));
    });

  return program;
}

export async function main(argv: string[], io: Io = processIo()): Promise<number> {
  let code: number = EXIT.OK;
  const program = buildProgram(io, (c) => {
    code = c;
  });
  program.exitOverride();
  for (const c of program.commands) {
    c.exitOverride();
    for (const sub of c.commands) sub.exitOverride();
  }
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      if (
        err.code === "commander.helpDisplayed" ||
        err.code === "commander.version" ||
        err.code === "commander.help"
      )
        return EXIT.OK;
      return EXIT.USAGE;
    }
    if (err instanceof CliError) {
      io.err.write(`${err.message}\n`);
      return err.exitCode;
    }
    io.err.write(`agent: ${(err as Error).stack ?? String(err)}\n`);
    return EXIT.ERROR;
  }
  return code;
}
