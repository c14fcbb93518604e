// The web-ui frontend provider's executable: declared in agent.hcl, it answers
// GetCapabilities, Configure and Describe like any frontend plugin; configured with a
// token (sensitive: written as env("NAME"), so the operator knows it and it is never in
// agent.hcl) it serves the web UI on loopback, each browser tab dialling the kernel's
// FrontendService.Attach over the go-plugin broker. Without a token it stays passive:
// the UI is never served without one. `agent serve --web` runs the same server in the
// served kernel's process instead, with a token of its own.
import type { JsonObject } from "@bufbuild/protobuf";
import { serve, service } from "@pluggableharness/plugin-sdk";
import { AttributeType, DiagnosticSeverity } from "@pluggableharness/protocol/config";
import { FrontendService } from "@pluggableharness/protocol/frontend";
import { Region } from "@pluggableharness/protocol/render";
import { attachOverGrpc } from "@pluggableharness/provider-tui/attach";
import { lazyConnection } from "./lazy-connection.ts";
import { startWebUi, type WebUi } from "./server.ts";

let running: Promise<WebUi> | undefined;

function problems(values: JsonObject): { port: number; token: string; errors: [string, string][] } {
  const errors: [string, string][] = [];
  const token = values["token"];
  const port = values["port"] ?? 0;
  // An omitted token arrives as "" (the schema bridge's zero value): no UI, not an error.
  if (
    token !== undefined &&
    token !== null &&
    token !== "" &&
    (typeof token !== "string" || token.length < 16)
  ) {
    errors.push(["token", "token must be a string of at least 16 characters"]);
  }
  if (typeof port !== "number" || !Number.isInteger(port) || port < 0 || port > 65535) {
    errors.push(["port", "port must be an integer from 0 to 65535"]);
  }
  return { port: typeof port === "number" ? port : 0, token: typeof token === "string" ? token : "", errors };
}

const plugin = await serve({
  packageJson: new URL("../package.json", import.meta.url),
  services: [
    service(FrontendService, {
      getCapabilities: () => ({
        capabilities: {
          configSchema: {
            attributes: [
              {
                name: "token",
                type: AttributeType.STRING,
                sensitive: true,
                description:
                  'The token a browser must present (open http://127.0.0.1:<port>/?token=<token>); at least 16 characters, written as env("NAME"). Without one the UI is not served.',
              },
              {
                name: "port",
                type: AttributeType.NUMBER,
                description: "Loopback port to listen on (0 or absent: any free port, named in the log).",
              },
            ],
          },
          supportedRegions: [Region.MAIN_CHAT, Region.OVERLAY, Region.TOP_BAR],
        },
      }),
      configure: async (req) => {
        const { port, token, errors } = problems(req.config ?? {});
        if (errors.length > 0) {
          return {
            result: {
              diagnostics: errors.map(([name, summary]) => ({
                severity: DiagnosticSeverity.ERROR,
                attributePath: [name],
                summary,
              })),
            },
          };
        }
        if (token && !running) {
          running = startWebUi({
            // Dialled per browser tab, not here: see lazy-connection.ts.
            connect: () => lazyConnection(async () => attachOverGrpc(await plugin.kernel.channel())),
            port,
            token,
            log: (m) => plugin.log.warn(m),
          });
          const ui = await running;
          // The port only: the token is the operator's own and never logged.
          plugin.log.info(
            `web UI listening on http://127.0.0.1:${ui.port}/ (open it with ?token=<your token>)`,
          );
        }
        return { result: {} };
      },
    }),
  ],
});
