// The tui plugin launched the way the kernel launches it (PluginHost, go-plugin
// handshake, broker). The test plays the kernel: it serves FrontendService.Attach on
// the callback connection, and gives the plugin a real terminal (a tmux pane's pty).
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { create } from "@bufbuild/protobuf";
import type { ServerDuplexStream } from "@grpc/grpc-js";
import { AttributeType, DiagnosticSeverity } from "@pluggableharness/protocol/config";
import {
  ClientDecision,
  type ClientEvent,
  FrontendService,
  type ServerEvent,
  ServerEventSchema,
} from "@pluggableharness/protocol/frontend";
import { KernelCallbackService } from "@pluggableharness/protocol/kernel";
import { PlanDecision, PlanDecisionScope } from "@pluggableharness/protocol/plan";
import { Region } from "@pluggableharness/protocol/render";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { RiskClass, ToolKind } from "@pluggableharness/protocol/tool";
import { createPluginHost, ISOLATIONS, type PluginTransportHost } from "@pluggableharness/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const SID = "01JPLUGINSESSION00000000000";

// Both transports: in a worker thread (its default) the plugin still owns the terminal it is
// given, and its Attach stream rides a socket the kernel opens on request.
describe.each(ISOLATIONS)("over the %s transport", (isolation) => {
  let dir: string;
  let socket: string;
  let host: PluginTransportHost;
  /** ClientEvents the plugin sent, and a way to wait for the next one. */
  const received: ClientEvent[] = [];
  let onReceive: (() => void) | undefined;
  let stream: ServerDuplexStream<ClientEvent, ServerEvent> | undefined;

  function nextEvent(kind: string): Promise<ClientEvent> {
    return new Promise((resolve) => {
      const check = () => {
        const found = received.find((e) => e.event.case === kind);
        if (found) {
          onReceive = undefined;
          resolve(found);
        } else onReceive = check;
      };
      check();
    });
  }

  function tmux(...args: string[]): string {
    return execFileSync("tmux", ["-S", socket, ...args], { encoding: "utf8" });
  }

  async function paneShows(text: string, timeoutMs = 15_000): Promise<string> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const screen = tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "ui");
      if (screen.includes(text)) return screen;
      if (Date.now() > end) throw new Error(`timed out waiting for ${JSON.stringify(text)}:\n${screen}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "tui-plugin-"));
    socket = join(dir, "tmux.sock");
    host = createPluginHost(isolation, {
      name: "tui",
      command: MAIN,
      callbacks: {
        service: KernelCallbackService,
        implementation: () => ({}),
        extraServices: () => [
          {
            service: FrontendService,
            handlers: {
              attach: (call: ServerDuplexStream<ClientEvent, ServerEvent>) => {
                stream = call;
                call.on("data", (e: ClientEvent) => {
                  received.push(e);
                  onReceive?.();
                });
                call.on("end", () => call.end());
              },
            },
          },
        ],
      },
    });
  });

  afterAll(async () => {
    await host?.shutdown();
    try {
      tmux("kill-server");
    } catch {
      // not started
    }
    rmSync(dir, { recursive: true, force: true });
  });

  describe("tui frontend plugin", () => {
    it("describes itself as a frontend with a config schema", async () => {
      const d = await host.describe();
      expect(host.isolation).toBe(isolation);
      expect(d.categories).toContain("frontend");
      expect(d.producers["frontend"]).toMatchObject({
        name: "tui",
        source: "github.com/pluggableharness/provider-tui",
      });
      const caps = (await host.client(FrontendService).getCapabilities({})).capabilities;
      expect(caps?.configSchema?.attributes.map((a) => [a.name, a.type])).toEqual([
        ["tty", AttributeType.STRING],
        ["session", AttributeType.STRING],
        ["profile", AttributeType.STRING],
      ]);
      expect(caps?.supportedRegions).toContain(Region.OVERLAY);
      const bad = await host.client(FrontendService).configure({ config: { tty: 42 } });
      expect(bad.result?.diagnostics).toMatchObject([
        { severity: DiagnosticSeverity.ERROR, attributePath: ["tty"] },
      ]);
    });

    it("dials the kernel's Attach over the broker and runs the UI on the terminal it is given", async () => {
      tmux("new-session", "-d", "-s", "ui", "-x", "100", "-y", "30", "sleep 600");
      const tty = tmux("display-message", "-p", "-t", "ui", "#{pane_tty}").trim();
      const res = await host.client(FrontendService).configure({ config: { tty, profile: "reviewer" } });
      expect(res.result?.diagnostics ?? []).toEqual([]);

      const createEv = await nextEvent("createSession");
      expect(createEv.event.value).toMatchObject({ profile: "reviewer" });
      const send = (e: Parameters<typeof create<typeof ServerEventSchema>>[1]) =>
        stream!.write(create(ServerEventSchema, e));
      send({
        sessionId: SID,
        requestId: "create",
        event: {
          case: "sessionCreated",
          value: { info: { sessionId: SID, profile: "reviewer", status: SessionStatus.RUNNING } },
        },
      });
      send({
        sessionId: SID,
        event: {
          case: "render",
          value: {
            content: {
              region: Region.MAIN_CHAT,
              content: { root: { node: { case: "text", value: { content: "hello from the kernel" } } } },
            },
          },
        },
      });
      send({
        sessionId: SID,
        event: {
          case: "permissionRequest",
          value: {
            planItem: {
              id: "item-7",
              toolCallId: "call-7",
              provider: "exec",
              toolName: "bash",
              input: { command: "make test" },
              decision: PlanDecision.ASK,
              kind: ToolKind.RESOURCE,
              risk: RiskClass.HIGH,
            },
          },
        },
      });
      await paneShows("hello from the kernel");
      await paneShows("Allow exec.bash to run make test · risk high");

      // A key typed in that terminal reaches the plugin, which answers over Attach.
      tmux("send-keys", "-t", "ui", "s");
      const decision = await nextEvent("planDecision");
      expect(decision.sessionId).toBe(SID);
      expect(decision.event.value).toMatchObject({
        planItemId: "item-7",
        decision: ClientDecision.ALLOW,
        scope: PlanDecisionScope.SESSION,
      });
      // A cold plugin process (sources, AutoMTLS) on a loaded 2-core runner can take long.
    }, 60_000);
  });
});
