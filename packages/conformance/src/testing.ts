// A small client for tests of tool providers over the real plugin boundary: typed
// helpers for Configure, Invoke (collecting every event), Preview and Render.
import type { JsonObject } from "@bufbuild/protobuf";
import { DiagnosticSeverity } from "@pluggableharness/protocol/config";
import type { RenderNode } from "@pluggableharness/protocol/render";
import {
  type ToolError,
  type ToolEvent,
  type ToolEvent_ExitStatus,
  ToolService,
} from "@pluggableharness/protocol/tool";
import { type LaunchedPlugin, type LaunchOptions, launchPlugin } from "./launch.ts";

export interface InvokeOptions {
  cwd?: string;
  sessionId?: string;
  callId?: string;
  signal?: AbortSignal;
  /** Called with each event as it arrives. */
  onEvent?: (event: ToolEvent) => void;
}

export interface Invocation {
  events: ToolEvent[];
  result?: JsonObject;
  error?: ToolError;
  exitStatus?: ToolEvent_ExitStatus;
  /** output_chunk data decoded and concatenated in arrival order. */
  output: string;
  /** The call was cancelled by the caller (the stream ended with an AbortError). */
  aborted: boolean;
}

let calls = 0;

export class ToolHarness {
  readonly plugin: LaunchedPlugin;

  constructor(options: LaunchOptions) {
    this.plugin = launchPlugin(options);
  }

  get client() {
    return this.plugin.host.client(ToolService);
  }

  get kernel() {
    return this.plugin.kernel;
  }

  /** Configures; throws with the summaries when any ERROR diagnostic comes back. */
  async configure(config: JsonObject): Promise<void> {
    const errors = await this.configureErrors(config);
    if (errors.length > 0) throw new Error(`configuration rejected: ${errors.join("; ")}`);
  }

  async configureErrors(config: JsonObject): Promise<string[]> {
    const res = await this.client.configure({ config });
    return (res.result?.diagnostics ?? [])
      .filter((d) => d.severity === DiagnosticSeverity.ERROR)
      .map((d) => d.summary);
  }

  async invoke(toolName: string, args: JsonObject, options: InvokeOptions = {}): Promise<Invocation> {
    const inv: Invocation = { events: [], output: "", aborted: false };
    const decoder = new TextDecoder();
    try {
      for await (const res of this.client.invoke(
        {
          call: {
            id: options.callId ?? `call-${process.pid}-${++calls}`,
            toolName,
            arguments: args,
            callContext: {
              sessionId: options.sessionId ?? "01TESTSESSION0000000000000",
              turnId: "01TESTTURN000000000000000",
              workingDirectory: options.cwd ?? "",
            },
          },
        },
        options.signal ? { signal: options.signal } : {},
      )) {
        const ev = res.event!;
        inv.events.push(ev);
        options.onEvent?.(ev);
        const e = ev.event;
        if (e.case === "outputChunk") inv.output += decoder.decode(e.value.data, { stream: true });
        else if (e.case === "result") inv.result = e.value.payload ?? {};
        else if (e.case === "error") inv.error = e.value;
        else if (e.case === "exitStatus") inv.exitStatus = e.value;
      }
    } catch (err) {
      if ((err as Error).name !== "AbortError") throw err;
      inv.aborted = true;
    }
    inv.output += decoder.decode();
    return inv;
  }

  async preview(toolName: string, args: JsonObject, cwd = ""): Promise<RenderNode | undefined> {
    const res = await this.client.preview({
      call: { id: `preview-${++calls}`, toolName, arguments: args, callContext: { workingDirectory: cwd } },
    });
    return res.preview?.root;
  }

  close(): Promise<void> {
    return this.plugin.close();
  }
}
