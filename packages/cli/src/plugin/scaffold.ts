// `agent plugin new <name> --category <category>`: a plugin project that builds, passes
// `agent conform` and can be published as it is. It has no npm dependencies: the SDK
// comes from this agent's installation when `agent plugin build` bundles it, and the
// test (plain JavaScript, run by `node --test`) drives the `agent` command itself.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type CategoryScaffold,
  contextScaffold,
  frontendScaffold,
  hookScaffold,
  memoryScaffold,
  slashCommandScaffold,
  widgetScaffold,
} from "./scaffold-categories.ts";

/** Every category `agent conform` checks; slash-command is a tool provider declaring commands. */
export const SCAFFOLD_CATEGORIES = [
  "tool",
  "model",
  "context",
  "memory",
  "hook",
  "frontend",
  "widget",
  "slash-command",
] as const;
export type ScaffoldCategory = (typeof SCAFFOLD_CATEGORIES)[number];

export interface ScaffoldOptions {
  name: string;
  category: ScaffoldCategory;
  /** Where to create it (default ./<name>). */
  dir: string;
  /** The forge address it will be published under. */
  source: string;
  /** The agent installation (for the editor's tsconfig paths). */
  installationRoot: string;
}

export class ScaffoldError extends Error {}

const NAME = /^[a-z0-9][a-z0-9-]*$/;

export function scaffoldPlugin(o: ScaffoldOptions): string[] {
  if (!NAME.test(o.name)) {
    throw new ScaffoldError(
      `"${o.name}" is not a plugin name: use lower-case letters, digits and dashes (e.g. provider-wordcount).`,
    );
  }
  if (existsSync(o.dir) && readdirSync(o.dir).length > 0)
    throw new ScaffoldError(`${o.dir} exists and is not empty.`);
  const files = filesFor(o);
  const written: string[] = [];
  for (const [rel, text] of Object.entries({ ...common(o), ...files })) {
    const path = join(o.dir, rel);
    mkdirSync(join(path, ".."), { recursive: true });
    writeFileSync(path, text);
    written.push(rel);
  }
  return written;
}

const json = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;

function common(o: ScaffoldOptions): Record<string, string> {
  const root = o.installationRoot;
  return {
    "package.json": json({
      name: o.name,
      version: "0.1.0",
      private: true,
      type: "module",
      description: `A PluggableHarness ${o.category} provider.`,
      pluggableharness: { source: o.source, main: "src/main.ts" },
      scripts: {
        build: "agent plugin build",
        // A glob, not a directory: Node 22+ reads a directory argument as a module to run.
        test: "node --test test/*.test.mjs",
      },
    }),
    // Only for editors and `tsc --noEmit`: the SDK's TypeScript sources in the agent's installation.
    "tsconfig.json": json({
      compilerOptions: {
        target: "es2024",
        module: "nodenext",
        moduleResolution: "nodenext",
        strict: true,
        allowImportingTsExtensions: true,
        verbatimModuleSyntax: true,
        resolveJsonModule: true,
        skipLibCheck: true,
        noEmit: true,
        types: ["node"],
        typeRoots: [join(root, "node_modules", "@types")],
        paths: {
          "@pluggableharness/plugin-sdk": [join(root, "packages/plugin-sdk/src/index.ts")],
          "@pluggableharness/tool-kit": [join(root, "packages/tool-kit/src/index.ts")],
          "@pluggableharness/goplugin": [join(root, "packages/goplugin/src/index.ts")],
          "@pluggableharness/protocol/*": [join(root, "packages/protocol/src/gen/*.ts")],
          "@bufbuild/protobuf": [join(root, "node_modules/@bufbuild/protobuf")],
          "@bufbuild/protobuf/*": [join(root, "node_modules/@bufbuild/protobuf/*")],
          "@grpc/grpc-js": [join(root, "node_modules/@grpc/grpc-js")],
        },
      },
      include: ["src"],
    }),
    ".gitignore": "dist/\nnode_modules/\n",
    "README.md": `# ${o.name}

A PluggableHarness ${o.category} provider, scaffolded by \`agent plugin new\`.

\`\`\`sh
npm test                 # builds it and runs \`agent conform\` against the build
agent plugin build       # dist/release/: one archive per platform + the checksum file
\`\`\`

Publish: tag \`v<version>\` (the version in package.json) and attach every file of
\`dist/release/\` to that release, e.g. \`gh release create v0.1.0 dist/release/*\`.
Use it in a project:

\`\`\`hcl
required_providers {
  ${localName(o.name)} = {
    source  = "${o.source}"
    version = "~> 0.1"
  }
}
\`\`\`
`,
  };
}

function localName(name: string): string {
  return name.replace(/^provider-/, "").replace(/-/g, "_");
}

// Spelt apart: scripts/bundle.ts rewrites every literal import-meta-url in the CLI's own
// sources (bundled code keeps its sources' locations), text for generated files included.
const IMPORT_META = "import.meta";

/** The conformance test: build, then `agent conform` on the build (AGENT_BIN overrides `agent`). */
function conformTest(o: ScaffoldOptions, extraArgs: string, asserts: string): string {
  return `// Builds the plugin and checks it with \`agent conform\`, the checks the agent itself
// holds plugins to. Run with \`npm test\` (node --test).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", ${IMPORT_META}.url));
const agent = process.env.AGENT_BIN ?? "agent";
const run = (args) => spawnSync(agent, args, { cwd: root, encoding: "utf8", timeout: 120_000 });

test("the build passes agent conform", () => {
  const build = run(["plugin", "build", "--dev"]);
  assert.equal(build.status, 0, \`agent plugin build failed:\\n\${build.stdout}\${build.stderr}\`);
  const r = run(["conform", join(root, "dist", "dev", "${o.name}")${extraArgs}]);
  assert.equal(r.status, 0, \`agent conform found problems:\\n\${r.stdout}\${r.stderr}\`);
${asserts}
});
`;
}

const OTHER: Record<Exclude<ScaffoldCategory, "tool" | "model">, (name: string) => CategoryScaffold> = {
  context: contextScaffold,
  memory: memoryScaffold,
  hook: hookScaffold,
  frontend: frontendScaffold,
  widget: widgetScaffold,
  "slash-command": slashCommandScaffold,
};

function filesFor(o: ScaffoldOptions): Record<string, string> {
  if (o.category === "tool") return toolFiles(o);
  if (o.category === "model") return modelFiles(o);
  const c = OTHER[o.category](o.name);
  return { ...c.files, "test/conform.test.mjs": conformTest(o, c.conformArgs, c.asserts) };
}

function toolFiles(o: ScaffoldOptions): Record<string, string> {
  return {
    "src/main.ts": `// ${o.name}: a PluggableHarness tool provider. \`agent plugin build\` bundles this file
// and the SDK into one executable; the agent starts it as its own process.
import { s, serveTools, type ToolDefinition, ToolFailure } from "@pluggableharness/tool-kit";
import pkg from "../package.json" with { type: "json" };

interface CountArgs {
  text: string;
}

/**
 * A data source: it only reads, so policy lets it run without asking and the agent runs
 * the plugin in a read-only sandbox. A tool that changes something is kind "resource"
 * (with a risk: low, medium, high or critical) and goes through the plan/apply gate.
 */
const countWords: ToolDefinition<CountArgs> = {
  name: "count_words",
  kind: "data_source",
  risk: "read_only",
  description: "Count the words, lines and characters of a text.",
  input: s.object({ text: s.string("The text to count.") }, ["text"]),
  output: s.object(
    {
      words: s.integer("Whitespace-separated words."),
      lines: s.integer("Lines (a last line without a newline counts)."),
      characters: s.integer("Unicode code points."),
    },
    ["words", "lines", "characters"],
  ),
  streaming: false,
  concurrency: { safe: true },
  idempotent: true,
  async invoke(args) {
    if (args.text.length > 1_000_000) throw new ToolFailure("invalid_arguments", "text is longer than 1,000,000 characters");
    const words = args.text.split(/\\s+/).filter((w) => w !== "").length;
    const lines = args.text === "" ? 0 : args.text.split("\\n").length - (args.text.endsWith("\\n") ? 1 : 0);
    return { words, lines, characters: [...args.text].length };
  },
};

await serveTools(pkg, { tools: [countWords] });
`,
    "test/samples.json": json([
      { tool: "count_words", arguments: { text: "one two\nthree four five\n" }, expect: "result" },
      { tool: "count_words", arguments: {}, expect: "invalid_arguments" },
    ]),
    "test/conform.test.mjs": conformTest(
      o,
      ', "--samples", join(root, "test", "samples.json")',
      "  assert.match(r.stdout, /PASS tool\\.schema/);\n  assert.match(r.stdout, /count_words/);",
    ),
  };
}

function modelFiles(o: ScaffoldOptions): Record<string, string> {
  return {
    "src/main.ts": MODEL_MAIN(o.name),
    "test/conform.test.mjs": conformTest(
      o,
      ', "--model", "echo-1"',
      "  assert.match(r.stdout, /PASS model\\.stream\\.shape/);",
    ),
  };
}

const MODEL_MAIN = (
  name: string,
) => `// ${name}: a PluggableHarness model provider. This one answers by echoing the last
// user message, which is enough to see the whole protocol: capabilities, a streamed
// completion (stream_start, text deltas, usage, stream_end), in-band errors and token
// counting. Replace complete() with calls to your model's API.
import { serve, service } from "@pluggableharness/plugin-sdk";
import { ModelErrorCategory, ModelService, StopReason } from "@pluggableharness/protocol/model";
import pkg from "../package.json" with { type: "json" };

const MODEL_ID = "echo-1";

const pricing = { currency: "USD", tiers: [{ inputPerMtok: 0, outputPerMtok: 0 }] };

/** Rough token count: what the kernel budgets context with until a real tokenizer is used. */
const tokens = (text: string) => BigInt(Math.max(1, Math.ceil(text.length / 4)));

/** The answer: the last user message's text, echoed. */
function complete(messages: readonly { role: number; content: readonly { block: { case?: string; value?: unknown } }[] }[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const text = messages[i]!.content
      .map((b) => (b.block.case === "text" ? (b.block.value as { text: string }).text : ""))
      .join("");
    if (text !== "") return \`You said: \${text}\`;
  }
  return "You said nothing.";
}

await serve({
  packageJson: pkg,
  services: [
    service(ModelService, {
      getCapabilities: () => ({
        capabilities: {
          models: [
            {
              id: MODEL_ID,
              displayName: "Echo",
              contextWindow: 32_000n,
              maxOutputTokens: 4_000n,
              supportsToolUse: false,
              supportsParallelToolCalls: false,
              supportsVision: false,
              supportsStreaming: true,
              thinking: { supported: false },
              caching: { supported: false },
              pricing,
            },
          ],
          configSchema: { attributes: [] },
        },
      }),
      configure: () => ({ result: {} }),
      countTokens: (req) => ({ count: tokens(req.text) }),
      async *streamCompletion(req, ctx) {
        // Failures are in-band error events with a category; the kernel decides on retries.
        if (req.modelId !== MODEL_ID) {
          yield { event: { case: "error", value: { category: ModelErrorCategory.INVALID_REQUEST, message: \`unknown model "\${req.modelId}"\` } } };
          return;
        }
        const unsupported = req.messages.flatMap((m) => m.content).find((b) => b.block.case !== "text");
        if (unsupported) {
          yield { event: { case: "error", value: { category: ModelErrorCategory.INVALID_REQUEST, message: \`\${unsupported.block.case} content is not supported\` } } };
          return;
        }
        yield { event: { case: "streamStart", value: { providerRequestId: \`echo-\${Date.now()}\` } } };
        const answer = complete(req.messages);
        for (const word of answer.split(/(?<= )/)) {
          if (ctx.signal.aborted) return; // cancellation ends the stream; no error event
          yield { event: { case: "textDelta", value: { text: word } } };
          await new Promise((r) => setTimeout(r, 5));
        }
        const input = req.messages.flatMap((m) => m.content).map((b) => (b.block.value as { text?: string }).text ?? "").join(" ");
        yield { event: { case: "usage", value: { inputTokens: tokens(input), outputTokens: tokens(answer) } } };
        yield { event: { case: "stop", value: { reason: StopReason.END_TURN, modelAffirmed: true } } };
      },
    }),
  ],
});

`;
