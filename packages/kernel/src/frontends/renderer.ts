// Emit -> Render -> Paint, kernel side. A persisted event is rendered by the build that
// produced it (its category's Render RPC, matched on name and version) and, when that
// producer is the kernel, declines, fails, times out or is not installed, by the kernel's
// generic renderer (generic-render.ts), which understands every event.v1 payload.
import { PluginCategory, type ProducerRef } from "@pluggableharness/protocol/common";
import type { PlacedContent, RenderTree } from "@pluggableharness/protocol/render";
import type { KernelLogger } from "../log.ts";
import type { ProviderRegistry } from "../plugins/providers.ts";
import { genericRenderTree, placed, type RenderableEvent } from "./generic-render.ts";

export { genericRenderTree, hasContent, placed, type RenderableEvent } from "./generic-render.ts";

/** Renders events through their producer's Render, falling back to the generic renderer. */
export class EventRenderer {
  readonly #providers: () => ProviderRegistry | undefined;
  readonly #timeoutMs: number;
  readonly #log: KernelLogger;

  constructor(providers: () => ProviderRegistry | undefined, log: KernelLogger, timeoutMs = 2_000) {
    this.#providers = providers;
    this.#log = log;
    this.#timeoutMs = timeoutMs;
  }

  async render(event: RenderableEvent): Promise<PlacedContent> {
    const tree = (await this.#viaProducer(event)) ?? genericRenderTree(event);
    return placed(tree);
  }

  async #viaProducer(event: RenderableEvent): Promise<RenderTree | undefined> {
    const category = event.producer.category;
    if (category === PluginCategory.KERNEL) return undefined;
    const key =
      category === PluginCategory.TOOL
        ? "tool"
        : category === PluginCategory.MODEL
          ? "model"
          : category === PluginCategory.CONTEXT
            ? "context"
            : category === PluginCategory.MEMORY
              ? "memory"
              : undefined;
    if (!key) return undefined;
    const provider = this.#providers()
      ?.all()
      .find((p) => {
        const ref: ProducerRef | undefined = p.producers[key];
        return (
          ref !== undefined && ref.name === event.producer.name && ref.version === event.producer.version
        );
      });
    if (!provider) return undefined;
    const request = { kind: event.kindText, payload: event.payload, schemaVersion: event.schemaVersion };
    const options = { timeoutMs: this.#timeoutMs };
    try {
      const res =
        key === "tool"
          ? await provider.ports.tool.render(request, options)
          : key === "model"
            ? await provider.ports.model.render(request, options)
            : key === "context"
              ? await provider.ports.context.render(request, options)
              : await provider.ports.memory.render(request, options);
      return res.tree;
    } catch (err) {
      // UNIMPLEMENTED is the ordinary "no Render"; anything else is worth a debug line.
      this.#log.debug("producer Render failed; using the generic renderer", {
        producer: event.producer.name,
        kind: event.kindText,
        error: (err as Error).message,
      });
      return undefined;
    }
  }
}
