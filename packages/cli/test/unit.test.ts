// In-process tests of the CLI's pieces: the init template, exit statuses, flag
// parsing, profile overrides and the headless printers.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { create, toBinary } from "@bufbuild/protobuf";
import { loadConfigSource } from "@pluggableharness/config";
import { PluginCategory } from "@pluggableharness/protocol/common";
import {
  ModelChoiceChangeSchema,
  PlanModeChangeSchema,
  type SessionSettingEvent,
  SessionSettingEventSchema,
} from "@pluggableharness/protocol/event";
import { ServerEventSchema, StreamDeltaKind } from "@pluggableharness/protocol/frontend";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { Region } from "@pluggableharness/protocol/render";
import { SessionStatus } from "@pluggableharness/protocol/session";
import type { StoredEvent } from "@pluggableharness/state";
import { describe, expect, it } from "vitest";
import { initConfigText, vendorsFound } from "../src/commands/init.ts";
import { configFailure } from "../src/commands/kernel-start.ts";
import { applyOverrides, idleFrontendReason, pluginFrontendOf } from "../src/commands/run.ts";
import { runPrune } from "../src/commands/sessions.ts";
import { parseDuration } from "../src/duration.ts";
import { EXIT, exitCodeFor } from "../src/exit-codes.ts";
import {
  HeadlessPrinter,
  RecordDecoder,
  type RunSummary,
  resultRecord,
  runExitCode,
} from "../src/headless.ts";
import { CliError, type Io } from "../src/io.ts";
import { REPO_ROOT } from "./helpers.ts";

function captureIo(): Io & { text(): string; errText(): string } {
  const out = new PassThrough();
  const err = new PassThrough();
  let o = "";
  let e = "";
  out.on("data", (d) => {
    o += d;
  });
  err.on("data", (d) => {
    e += d;
  });
  return { out, err, env: {}, cwd: "/", text: () => o, errText: () => e };
}

function summary(over: Partial<RunSummary> = {}): RunSummary {
  return {
    sessionId: "S1",
    sessionCostUsd: 0.5,
    sessionOwnCostUsd: 0.5,
    status: SessionStatus.COMPLETED,
    detail: "",
    numTurns: 3,
    durationMs: 1234,
    totalCostUsd: 0.25,
    ownCostUsd: 0.25,
    usage: {
      input_tokens: 100,
      output_tokens: 20,
      cache_read_input_tokens: 5,
      cache_creation_input_tokens: 0,
    },
    finalText: "All done.\n",
    denials: [],
    model: "anthropic/claude-sonnet-5",
    ...over,
  };
}

describe("agent init", () => {
  it("finds every configured vendor in the built-in order", () => {
    const env = {
      XAI_API_KEY: "x",
      ANTHROPIC_API_KEY: "a",
      OPENAI_BASE_URL: "http://h/v1",
      OPENAI_MODEL: "m",
      OPENAI_API_KEY: "k",
    };
    expect(vendorsFound(env).map((f) => f.vendor.provider)).toEqual([
      "anthropic",
      "xai",
      "openai-compatible",
    ]);
    expect(vendorsFound({ GOOGLE_API_KEY: "g" }).map((f) => f.variables)).toEqual([["GOOGLE_API_KEY"]]);
    expect(vendorsFound({})).toEqual([]);
  });

  it("writes the base URL a key comes with, as zero-config uses it", () => {
    const found = vendorsFound({ ANTHROPIC_API_KEY: "a", ANTHROPIC_BASE_URL: "http://proxy" });
    const text = initConfigText(found);
    expect(text).toMatch(/provider "anthropic" \{[^}]*base_url += env\("ANTHROPIC_BASE_URL"\)/);
    expect(text).toContain("# Vendor credentials found: ANTHROPIC_API_KEY.");
    const openai = vendorsFound({ OPENAI_API_KEY: "k", OPENAI_BASE_URL: "http://gateway/v1" });
    expect(openai.map((f) => f.vendor.provider)).toEqual(["openai"]);
    expect(initConfigText(openai)).toMatch(/provider "openai" \{[^}]*base_url += env\("OPENAI_BASE_URL"\)/);
  });

  it("writes a configuration that loads without errors, the first vendor primary and the rest fallbacks", () => {
    const found = vendorsFound({
      ANTHROPIC_API_KEY: "a",
      OPENAI_BASE_URL: "http://localhost:11434/v1",
      OPENAI_MODEL: "qwen3",
    });
    const text = initConfigText(found);
    const loaded = loadConfigSource(text, "agent.hcl", "/work/project");
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics, null, 2));
    const profile = loaded.config.profiles.find((p) => p.name === "default")!;
    expect(profile.model?.primary).toMatchObject({ provider: "anthropic" });
    expect(profile.model?.fallbacks.map((f) => [f.provider, f.id])).toContainEqual([
      "openai-compatible",
      "qwen3",
    ]);
    expect(loaded.config.policies.map((p) => [p.name, p.action])).toEqual([
      ["allow_reads", "allow"],
      ["ask_before_changes", "ask"],
      ["allow_subagents", "allow"],
    ]);
    // Sub-agents with the built-in profiles, on the default profile's model.
    expect(loaded.config.profiles.map((p) => [p.name, p.model?.primary.provider])).toEqual([
      ["default", "anthropic"],
      ["explorer", "anthropic"],
      ["worker", "anthropic"],
    ]);
    const explorer = loaded.config.profiles.find((p) => p.name === "explorer")!;
    expect(explorer.tools.map((t) => t.text)).not.toContain("filesystem.*");
    expect(text).toContain('base_url = env("OPENAI_BASE_URL")');
  });
});

describe("exit statuses", () => {
  it("are distinct for success, bound reached, denied or cancelled, and error", () => {
    expect(exitCodeFor(SessionStatus.COMPLETED, 0)).toBe(EXIT.OK);
    for (const s of [
      SessionStatus.ERROR_MAX_TURNS,
      SessionStatus.ERROR_MAX_BUDGET_USD,
      SessionStatus.ERROR_MAX_WALL_CLOCK,
    ])
      expect(exitCodeFor(s, 0)).toBe(EXIT.BOUND);
    expect(exitCodeFor(SessionStatus.CANCELLED, 0)).toBe(EXIT.DENIED_OR_CANCELLED);
    expect(exitCodeFor(SessionStatus.COMPLETED, 2)).toBe(EXIT.DENIED_OR_CANCELLED);
    expect(exitCodeFor(SessionStatus.FAILED, 0)).toBe(EXIT.ERROR);
    // A denied call is exit 4 even when a bound stopped the run afterwards; a failure stays 1.
    expect(exitCodeFor(SessionStatus.ERROR_MAX_TURNS, 1)).toBe(EXIT.DENIED_OR_CANCELLED);
    expect(exitCodeFor(SessionStatus.FAILED, 1)).toBe(EXIT.ERROR);
    expect(new Set(Object.values(EXIT)).size).toBe(5);
    // The denial breaker ends a run as FAILED, but it was stopped by denials.
    expect(
      runExitCode(summary({ status: SessionStatus.FAILED, detail: "denial_breaker: too many denied" })),
    ).toBe(4);
    expect(runExitCode(summary({ status: SessionStatus.FAILED, detail: "model error" }))).toBe(1);
  });

  it("are 4 for a run a guard ended after denials (a loop of denied calls), 1 for a guard alone", () => {
    const denied = [{ provider: "exec", tool_name: "bash", tool_call_id: "c1", decided_by: "headless" }];
    const failed = (detail: string, denials = denied) =>
      runExitCode(summary({ status: SessionStatus.FAILED, detail, denials }));
    expect(failed("doom_loop: the same tool call was repeated")).toBe(4);
    expect(failed("doom_loop: …; the final-answer turn failed (model_error overloaded: x)")).toBe(4);
    expect(failed("crash_breaker: a tool provider crashed repeatedly")).toBe(4);
    expect(failed("doom_loop: the same tool call was repeated", [])).toBe(1);
    expect(failed("crash_breaker: a tool provider crashed repeatedly", [])).toBe(1);
    // A failure that is not a guard stays an error, denials or not; a look-alike is not a guard.
    expect(failed("model_error auth_error: bad key")).toBe(1);
    expect(failed("doom_loops are not a guard")).toBe(1);
  });
});

describe("flags", () => {
  it("parses durations", () => {
    expect(parseDuration("90", "--x")).toBe(90);
    expect(parseDuration("15m", "--x")).toBe(900);
    expect(parseDuration("1h30m", "--x")).toBe(5400);
    expect(() => parseDuration("soon", "--max-wall-clock")).toThrow(
      /--max-wall-clock: "soon" is not a duration/,
    );
  });

  const base = loadConfigSource(
    `required_providers {
  anthropic = {
    source  = "pluggableharness/anthropic"
    version = ">= 0.1.0"
  }
  xai = {
    source  = "pluggableharness/xai"
    version = ">= 0.1.0"
  }
}
agent_profile "default" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-sonnet-5"
    }
    fallback {
      provider = "anthropic"
      id       = "claude-haiku-4-5"
    }
  }
  max_turns = 50
}
`,
    "agent.hcl",
    "/p",
  );
  if (!base.ok) throw new Error("fixture config does not load");

  it("applies --model and the bounds to a copy of the profile", () => {
    const cfg = applyOverrides(base.config, "default", {
      model: "xai/grok-4-5",
      maxTurns: "7",
      maxBudgetUsd: "0.5",
      maxWallClock: "2m",
    });
    const p = cfg.profiles.find((x) => x.name === "default")!;
    expect(p.model?.primary).toMatchObject({ provider: "xai", id: "grok-4-5" });
    expect(p.model?.fallbacks).toEqual([]);
    expect(p).toMatchObject({ max_turns: 7, max_cost_usd: 0.5, max_wall_clock_s: 120 });
    // The loaded configuration itself is untouched.
    expect(base.config.profiles.find((x) => x.name === "default")).toMatchObject({ max_turns: 50 });
  });

  it("rejects a model of an undeclared provider, a malformed model and unknown profiles", () => {
    const usage = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        return err instanceof CliError ? err.exitCode : -1;
      }
      return 0;
    };
    expect(usage(() => applyOverrides(base.config, "default", { model: "openai/gpt" }))).toBe(EXIT.USAGE);
    expect(usage(() => applyOverrides(base.config, "default", { model: "claude" }))).toBe(EXIT.USAGE);
    expect(usage(() => applyOverrides(base.config, "default", { maxTurns: "0" }))).toBe(EXIT.USAGE);
    expect(usage(() => applyOverrides(base.config, "nope", {}))).toBe(EXIT.ERROR);
  });

  it("turns the no-key diagnostic into one sentence", () => {
    const err = configFailure([
      {
        severity: "error",
        category: "no_model_provider",
        summary: "No model provider configured",
        detail: "Set one of X.",
        file: "<built-in>",
        line: 1,
        column: 1,
      },
    ]);
    expect(err.message).toBe("agent: Set one of X.");
  });

  it("prune refuses to run without being told what to delete", () => {
    expect(() => runPrune(captureIo(), [], {})).toThrow(/deletes only what it is told to/);
  });
});

describe("headless printers", () => {
  const ev = (e: Parameters<typeof create<typeof ServerEventSchema>>[1]) => create(ServerEventSchema, e);

  it("stream-json: one object per line for deltas, usage and status, then the result", () => {
    const io = captureIo();
    const p = new HeadlessPrinter(io, "stream-json", false);
    p.init({
      sessionId: "S1",
      model: "m/x",
      tools: [
        { name: "fs__read_file", provider: "fs", tool: "read_file", kind: "data_source", risk: "read_only" },
      ],
      profile: "default",
      cwd: "/w",
      headlessAsk: "deny",
      planMode: true,
    });
    p.event(
      ev({
        sessionId: "S1",
        event: { case: "streamDelta", value: { targetId: "t", text: "Hi", kind: StreamDeltaKind.TEXT } },
      }),
    );
    p.event(ev({ sessionId: "S1", event: { case: "render", value: {} } }));
    p.event(
      ev({
        sessionId: "S1",
        event: {
          case: "usageUpdate",
          value: {
            providerName: "m",
            modelId: "x",
            inputTokens: 10n,
            outputTokens: 2n,
            costUsd: 0.1,
            sessionCostUsd: 0.1,
          },
        },
      }),
    );
    p.event(
      ev({
        sessionId: "S1",
        event: {
          case: "sessionStatusUpdate",
          value: { status: SessionStatus.COMPLETED, previousStatus: SessionStatus.RUNNING },
        },
      }),
    );
    expect(p.result(summary())).toBe(0);
    const recs = io
      .text()
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(recs.map((r) => r.type)).toEqual(["init", "delta", "usage", "status", "result"]);
    expect(recs[0]).toMatchObject({
      session_id: "S1",
      plan_mode: true,
      tools: [
        { name: "fs__read_file", provider: "fs", tool: "read_file", kind: "data_source", risk: "read_only" },
      ],
    });
    expect(recs[1]).toMatchObject({ kind: "text", text: "Hi", target_id: "t" });
    expect(recs[2]).toMatchObject({ input_tokens: 10, output_tokens: 2, cost_usd: 0.1 });
    expect(recs[3]).toMatchObject({ status: "completed", previous_status: "running" });
    expect(recs[4]).toEqual(resultRecord(summary()));
    expect(recs[4]).toMatchObject({
      subtype: "success",
      num_turns: 3,
      duration_ms: 1234,
      total_cost_usd: 0.25,
      session_cost_usd: 0.5,
      session_id: "S1",
      result: "All done.\n",
      usage: {
        input_tokens: 100,
        output_tokens: 20,
        cache_read_input_tokens: 5,
        cache_creation_input_tokens: 0,
      },
    });
  });

  it("keeps status-line notices (a rate-limit retry) out of the transcript", () => {
    const notice = ev({
      sessionId: "S1",
      event: {
        case: "render",
        value: {
          content: {
            region: Region.TOP_BAR,
            replace: true,
            content: {
              root: { node: { case: "text", value: { content: "m/x is rate limited; retry 1 of 5 in 2s" } } },
            },
          },
        },
      },
    });
    const chat = ev({
      sessionId: "S1",
      event: {
        case: "render",
        value: {
          content: {
            region: Region.MAIN_CHAT,
            content: { root: { node: { case: "text", value: { content: "Assistant" } } } },
          },
        },
      },
    });
    const sj = captureIo();
    const p = new HeadlessPrinter(sj, "stream-json", true);
    p.event(notice);
    p.event(chat);
    expect(
      sj
        .text()
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l)),
    ).toEqual([
      { type: "notice", session_id: "S1", text: "m/x is rate limited; retry 1 of 5 in 2s" },
      { type: "render", session_id: "S1", text: "Assistant" },
    ]);
    const tx = captureIo();
    const t = new HeadlessPrinter(tx, "text", true);
    t.event(notice);
    t.event(chat);
    expect(tx.text()).toBe("Assistant\n");
    expect(tx.errText()).toBe("agent: m/x is rate limited; retry 1 of 5 in 2s\n");
  });

  it("json prints only the final record; text only the final answer (and why it stopped, on stderr)", () => {
    const json = captureIo();
    const pj = new HeadlessPrinter(json, "json", false);
    pj.init({
      sessionId: "S1",
      model: "",
      tools: [],
      profile: "default",
      cwd: "/",
      headlessAsk: "deny",
      planMode: false,
    });
    pj.event(ev({ sessionId: "S1", event: { case: "streamDelta", value: { targetId: "t", text: "Hi" } } }));
    expect(pj.result(summary({ status: SessionStatus.ERROR_MAX_TURNS }))).toBe(3);
    expect(json.text().trim().split("\n")).toHaveLength(1);
    expect(JSON.parse(json.text())).toMatchObject({
      type: "result",
      subtype: "error_max_turns",
      is_error: true,
    });

    const text = captureIo();
    const pt = new HeadlessPrinter(text, "text", false);
    pt.event(ev({ sessionId: "S1", event: { case: "streamDelta", value: { targetId: "t", text: "Hi" } } }));
    expect(pt.result(summary({ status: SessionStatus.CANCELLED, detail: "interrupted" }))).toBe(4);
    expect(text.text()).toBe("All done.\n");
    expect(text.errText()).toContain("ended: interrupted");

    // A denied call's line on stderr says which rule refused it and how to change that.
    const refused = captureIo();
    const reason = 'denied by policy rule "no_bash"; to allow it, change that rule\'s action';
    const denial = { provider: "exec", tool_name: "bash", tool_call_id: "c1", decided_by: "no_bash", reason };
    expect(new HeadlessPrinter(refused, "text", false).result(summary({ denials: [denial] }))).toBe(4);
    expect(refused.errText()).toContain("1 tool call(s) denied");
    expect(refused.errText()).toContain(`agent: denied exec.bash: ${reason}\n`);
  });
});

describe("stream-json records of session settings", () => {
  it("say what /model and /plan changed, a cleared model as null", () => {
    const decoder = new RecordDecoder("S");
    const event = (sequence: number, change: SessionSettingEvent["change"], origin: string): StoredEvent => ({
      sequence,
      id: `e${sequence}`,
      timestamp: "2026-01-01T00:00:00.000Z",
      kind: EventKind.SESSION_SETTING,
      kindText: "session_setting",
      producer: { category: PluginCategory.KERNEL, name: "kernel", version: "1" },
      schemaVersion: "1",
      payload: toBinary(SessionSettingEventSchema, create(SessionSettingEventSchema, { change, origin })),
    });
    const model = (provider: string, modelId: string, previous: string) =>
      ({ case: "model", value: create(ModelChoiceChangeSchema, { provider, modelId, previous }) }) as const;
    expect([
      ...decoder.records(event(1, model("openai", "gpt-5", "anthropic/claude"), "/model")),
      ...decoder.records(
        event(2, { case: "planMode", value: create(PlanModeChangeSchema, { on: true }) }, "/plan"),
      ),
      ...decoder.records(event(3, model("", "", "openai/gpt-5"), "/model")),
    ]).toEqual([
      {
        type: "session_setting",
        session_id: "S",
        origin: "/model",
        model: "openai/gpt-5",
        previous_model: "anthropic/claude",
      },
      { type: "session_setting", session_id: "S", origin: "/plan", plan_mode: true },
      {
        type: "session_setting",
        session_id: "S",
        origin: "/model",
        model: null,
        previous_model: "openai/gpt-5",
      },
    ]);
  });
});

describe("start-up cost of the read-only session commands", () => {
  // Runs the command through the CLI's main() in a child Node process that records every
  // module it resolves, so the test sees exactly what `agent sessions …` loads.
  function modulesLoadedBy(args: string[]): string[] {
    const dir = mkdtempSync(join(tmpdir(), "agent-cli-modules-"));
    try {
      const out = join(dir, "modules.json");
      const script = `
        import { registerHooks } from "node:module";
        import { writeFileSync } from "node:fs";
        const seen = [];
        registerHooks({ resolve(s, c, next) { const r = next(s, c); seen.push(r.url); return r; } });
        const { main } = await import(${JSON.stringify(join(REPO_ROOT, "packages/cli/src/index.ts"))});
        await main(["node", "agent", ...${JSON.stringify(args)}]);
        writeFileSync(${JSON.stringify(out)}, JSON.stringify(seen));`;
      const r = spawnSync(join(REPO_ROOT, "node_modules/.bin/node"), ["--input-type=module", "-e", script], {
        env: { ...process.env, XDG_STATE_HOME: dir, HOME: dir },
        encoding: "utf8",
      });
      expect(r.stderr).not.toMatch(/Error \[|TypeError|SyntaxError/);
      return (JSON.parse(readFileSync(out, "utf8")) as string[]).map((u) =>
        u.replace(`file://${REPO_ROOT}`, ""),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  // runtime's socket-dirs.ts (where serve's record is) needs Node's built-ins only; the loop's
  // stored-events.ts (the write half of stored inputs) only protobuf and the protocol;
  // plugin-sdk's memory-ids.ts (the memory id rule memory/links.ts applies) nothing at all.
  const HEAVY =
    /packages\/(runtime\/src\/(?!socket-dirs\.ts)|config\/|plugin-sdk\/(?!src\/memory-ids\.ts)|goplugin\/|hcl\/|conformance\/)|packages\/kernel\/src\/(?!frontends\/(generic-render|stored-inputs|argument-summary)\.ts|loop\/turn\/stored-events\.ts|memory\/links\.ts)|@grpc|providers\/tui\/src\/(app|attach|index)\.ts/;

  it("sessions show loads the generic renderer, not the kernel, the runtime or the configuration", () => {
    const loaded = modulesLoadedBy(["sessions", "show", "01ARZ3NDEKTSV4RRFFQ69G5FAV"]);
    expect(loaded).toContain("packages/kernel/src/frontends/generic-render.ts");
    expect(loaded).toContain("packages/cli/src/commands/show.ts");
    expect(loaded.filter((u) => HEAVY.test(u))).toEqual([]);
  });

  it("sessions list loads no kernel either", () => {
    const loaded = modulesLoadedBy(["sessions", "list"]);
    expect(loaded).toContain("packages/cli/src/commands/sessions.ts");
    expect(loaded.filter((u) => HEAVY.test(u))).toEqual([]);
  });
});

describe("settings.default_frontend", () => {
  const config = (providers: string, frontend: string) => {
    const text = `required_providers {
  tui = {
    source  = "pluggableharness/tui"
    version = ">= 0.1.0"
  }
  web = {
    source  = "pluggableharness/web-ui"
    version = ">= 0.1.0"
  }
}
${providers}
settings {
  default_frontend = "${frontend}"
}
`;
    const loaded = loadConfigSource(text, "agent.hcl", "/work/project");
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.diagnostics));
    return loaded.config;
  };

  it("hands the run to a plugin frontend only, and refuses one that would serve nobody", () => {
    // The tui the CLI runs itself, or an undeclared name: the terminal UI.
    expect(pluginFrontendOf(config("", "tui"))).toBeUndefined();
    expect(pluginFrontendOf(config("", "elsewhere"))).toBeUndefined();
    // The web UI is a plugin; without a token it would stay passive.
    const bare = config("", "web");
    expect(pluginFrontendOf(bare)).toBe("web");
    expect(idleFrontendReason(bare, "web")).toMatch(/serves nothing without a token/);
    const served = config('provider "web" {\n  token = env("HOME")\n}\n', "web");
    expect(idleFrontendReason(served, "web")).toBeUndefined();
    // A tui with a block runs as a plugin, and paints only with a tty.
    const passive = config('provider "tui" {\n  session = "x"\n}\n', "tui");
    expect(pluginFrontendOf(passive)).toBe("tui");
    expect(idleFrontendReason(passive, "tui")).toMatch(/paints on no terminal/);
    const painted = config('provider "tui" {\n  tty = "/dev/pts/9"\n}\n', "tui");
    expect(idleFrontendReason(painted, "tui")).toBeUndefined();
  });
});
