// The tui frontend provider's executable. It answers GetCapabilities, Configure and
// Describe like any frontend plugin. Given a terminal device in its configuration
// (`tty = "/dev/pts/N"`), it dials the kernel's FrontendService.Attach over the
// go-plugin broker and runs the terminal UI on that device. Without one it stays
// passive: `agent run` runs this same UI in its own process on its own terminal
// (see docs/decisions/cli-and-tui.md, "CLI and terminal UI").
import { closeSync, createReadStream, createWriteStream, openSync } from "node:fs";
import { isatty, ReadStream, WriteStream } from "node:tty";
import type { JsonObject } from "@bufbuild/protobuf";
import { serve, service } from "@pluggableharness/plugin-sdk";
import { AttributeType, DiagnosticSeverity } from "@pluggableharness/protocol/config";
import { FrontendService } from "@pluggableharness/protocol/frontend";
import { Region } from "@pluggableharness/protocol/render";
import { runTui, type SessionTarget, type TuiInput, type TuiOutput } from "./app.ts";
import { attachOverGrpc } from "./attach.ts";

interface TuiConfig {
  tty: string;
  session: string;
  profile: string;
}

function readConfig(values: JsonObject): { config: TuiConfig; errors: string[] } {
  const errors: string[] = [];
  const str = (name: keyof TuiConfig): string => {
    const v = values[name];
    if (v === undefined || v === null) return "";
    if (typeof v !== "string") {
      errors.push(name);
      return "";
    }
    return v;
  };
  return { config: { tty: str("tty"), session: str("session"), profile: str("profile") }, errors };
}

let running = false;

const plugin = await serve({
  packageJson: new URL("../package.json", import.meta.url),
  services: [
    service(FrontendService, {
      getCapabilities: () => ({
        capabilities: {
          configSchema: {
            attributes: [
              {
                name: "tty",
                type: AttributeType.STRING,
                description:
                  "Terminal device this plugin paints on and reads keys from (e.g. the output of `tty` in another terminal). Empty: the plugin stays passive.",
              },
              {
                name: "session",
                type: AttributeType.STRING,
                description: "Session id to resume; empty creates one.",
              },
              {
                name: "profile",
                type: AttributeType.STRING,
                description: "Agent profile for a new session.",
              },
            ],
          },
          supportedRegions: [
            Region.MAIN_CHAT,
            Region.OVERLAY,
            Region.TOP_BAR,
            Region.HOTKEY_HINTS,
            Region.INPUT_BAR,
            Region.SIDEBAR,
          ],
        },
      }),
      configure: (req) => {
        const values: JsonObject = req.config ?? {};
        const { config, errors } = readConfig(values);
        if (errors.length > 0) {
          return {
            result: {
              diagnostics: errors.map((name) => ({
                severity: DiagnosticSeverity.ERROR,
                attributePath: [name],
                summary: `${name} must be a string`,
              })),
            },
          };
        }
        if (config.tty && !running) {
          running = true;
          void start(config).catch((err: unknown) => {
            plugin.log.error("terminal UI failed", { error: (err as Error).message });
          });
        }
        return { result: {} };
      },
    }),
  ],
});

/** Opens the terminal device and runs the UI on it over the kernel's Attach stream. */
async function start(config: TuiConfig): Promise<void> {
  const fd = openSync(config.tty, "r+");
  const tty = isatty(fd);
  const input = (tty
    ? new ReadStream(fd)
    : createReadStream("", { fd, autoClose: false })) as unknown as TuiInput;
  const output = (tty
    ? new WriteStream(fd)
    : createWriteStream("", { fd, autoClose: false })) as unknown as TuiOutput;
  // This process does not own that terminal, so no SIGWINCH arrives: poll its size.
  const poll =
    output instanceof WriteStream
      ? setInterval(() => {
          const [columns, rows] = output.getWindowSize();
          if (columns !== output.columns || rows !== output.rows) {
            output.columns = columns;
            output.rows = rows;
            output.emit("resize");
          }
        }, 500)
      : undefined;
  poll?.unref();
  const connection = attachOverGrpc(await plugin.kernel.channel());
  const session: SessionTarget = config.session
    ? { kind: "resume", sessionId: config.session }
    : { kind: "create", ...(config.profile ? { profile: config.profile } : {}) };
  try {
    await runTui({ connection, input, output: output as unknown as TuiOutput, session });
  } finally {
    clearInterval(poll);
    if (!tty) closeSync(fd);
    running = false;
  }
}
