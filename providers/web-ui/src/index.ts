// The web UI as a library: `agent serve --web` runs it in the served kernel's process on
// kernel.frontends connections; the plugin executable (main.ts) runs it over Attach.
export type { ClientEventInit, FrontendConnection } from "./connection.ts";
export { allowedHosts, check, cookieName, type Refusal } from "./guard.ts";
export { startWebUi, type WebUi, type WebUiOptions } from "./server.ts";
