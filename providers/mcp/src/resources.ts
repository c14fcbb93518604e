// MCP resources as two data sources, offered when the server declares resources:
// list_resources (resources and resource templates, paged) and read_resource (one URI).
// Reading a resource is read-only by the protocol's definition, not by the server's word.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { RiskClass, ToolKind } from "@pluggableharness/protocol/tool";
import { ToolFailure } from "@pluggableharness/tool-kit";
import { formatBytes } from "./budget.ts";
import { CLIP_KEY, clipReportOf } from "./clip.ts";
import type { Connection } from "./connection.ts";
import { budgetItems, failureOf, type Item, type ToolSchemaInit } from "./tools.ts";

const STRING = 2;
const OBJECT = 1;
const ARRAY = 6;

const listItem = { type: OBJECT, properties: [], required: [] };

export const RESOURCE_OPERATIONS: readonly ToolSchemaInit[] = [
  {
    name: "list_resources",
    kind: ToolKind.DATA_SOURCE,
    risk: RiskClass.READ_ONLY,
    description:
      "Lists the resources this MCP server offers (uri, name, description, MIME type) and its resource templates. Pass next_cursor back as cursor for the next page.",
    inputSchema: {
      type: OBJECT,
      properties: [
        { name: "cursor", schema: { type: STRING, description: "next_cursor of the previous page" } },
      ],
      required: [],
    },
    outputSchema: {
      type: OBJECT,
      properties: [
        { name: "resources", schema: { type: ARRAY, items: listItem } },
        { name: "templates", schema: { type: ARRAY, items: listItem } },
        { name: "next_cursor", schema: { type: STRING } },
        {
          name: "note",
          schema: { type: STRING, description: "Set when the list was cut to fit max_output_bytes." },
        },
      ],
      required: ["resources", "templates"],
    },
    streaming: false,
    concurrency: { safe: true, keyFields: [] },
    defaultTimeout: { seconds: 60n, nanos: 0 },
    idempotent: true,
  },
  {
    name: "read_resource",
    kind: ToolKind.DATA_SOURCE,
    risk: RiskClass.READ_ONLY,
    description: "Reads one resource of this MCP server by its URI (from list_resources or a template).",
    inputSchema: {
      type: OBJECT,
      properties: [{ name: "uri", schema: { type: STRING, description: "The resource's URI" } }],
      required: ["uri"],
    },
    outputSchema: {
      type: OBJECT,
      properties: [
        { name: "text", schema: { type: STRING, description: "The text contents, joined." } },
        { name: "contents", schema: { type: ARRAY, items: listItem } },
      ],
      required: ["text", "contents"],
    },
    streaming: false,
    concurrency: { safe: true, keyFields: [] },
    defaultTimeout: { seconds: 60n, nanos: 0 },
    idempotent: true,
    modelTextField: "text",
    modelOmittedFields: ["contents"],
  },
];

export function isResourceOperation(name: string): boolean {
  return name === "list_resources" || name === "read_resource";
}

const str = (v: unknown) => (typeof v === "string" ? v : "");

/** A listing cut to the budget: whole entries from the front, and a note saying so. */
function fitListing(out: JsonObject, maxBytes: number, clipped: boolean): JsonObject {
  const size = (o: JsonObject) => Buffer.byteLength(JSON.stringify(o));
  if (!clipped && size(out) <= maxBytes) return out;
  const resources = out["resources"] as JsonValue[];
  const templates = out["templates"] as JsonValue[];
  const fit = (list: JsonValue[], key: string) => {
    // Binary search on how many entries fit with the rest as it is.
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (size({ ...out, [key]: list.slice(0, mid), note: "x".repeat(300) }) <= maxBytes) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  const t = fit(templates, "templates");
  out = { ...out, templates: templates.slice(0, t) };
  const r = fit(resources, "resources");
  const left = resources.length - r + (templates.length - t);
  return {
    ...out,
    resources: resources.slice(0, r),
    note: `${left > 0 ? `${left} more entries were left out` : "the server's answer was cut"} to fit max_output_bytes = ${formatBytes(maxBytes)}${out["next_cursor"] ? "; next_cursor continues after the last entry the server sent" : ""}.`,
  };
}

export async function listResources(
  c: Connection,
  args: JsonObject,
  signal: AbortSignal,
): Promise<JsonObject> {
  const cursor = str(args["cursor"]);
  const options = { signal, timeout: c.settings.toolTimeoutMs };
  try {
    const page = await c.client.listResources(cursor ? { cursor } : {}, options);
    // Templates are listed with the first page only (they are few, and not paged with resources).
    const templates = cursor
      ? []
      : await c.client
          .listResourceTemplates({}, options)
          .then((t) => t.resourceTemplates)
          .catch(() => []);
    const clip = clipReportOf(page as Record<string, unknown>);
    const out: JsonObject = {
      resources: page.resources.map((r) => ({
        uri: r.uri,
        name: r.name,
        ...(r.title ? { title: r.title } : {}),
        ...(r.description ? { description: r.description } : {}),
        ...(r.mimeType ? { mime_type: r.mimeType } : {}),
      })),
      templates: templates.map((t) => ({
        uri_template: t.uriTemplate,
        name: t.name,
        ...(t.description ? { description: t.description } : {}),
        ...(t.mimeType ? { mime_type: t.mimeType } : {}),
      })),
      ...(page.nextCursor ? { next_cursor: page.nextCursor } : {}),
    };
    return fitListing(c.redactor.maskJson(out), c.settings.maxOutputBytes, clip !== undefined);
  } catch (err) {
    throw failureOf(err, (t) => c.redactor.mask(t), c.settings.maxOutputBytes);
  }
}

export async function readResource(
  c: Connection,
  args: JsonObject,
  signal: AbortSignal,
): Promise<JsonObject> {
  const uri = str(args["uri"]);
  if (!uri) throw new ToolFailure("invalid_arguments", "read_resource needs uri");
  try {
    const raw = await c.client.readResource({ uri }, { signal, timeout: c.settings.toolTimeoutMs });
    const clip = clipReportOf(raw as Record<string, unknown>);
    const { [CLIP_KEY]: _, ...unmasked } = raw as Record<string, unknown>;
    const r = c.redactor.maskJson(unmasked) as typeof raw;
    const items: Item[] = r.contents.map((item, i) => {
      const base = { uri: item.uri, ...(item.mimeType ? { mime_type: item.mimeType } : {}) };
      if ("text" in item && typeof item.text === "string") {
        const lost =
          (clip?.cuts.find((x) => x.path.join("/") === `contents/${i}/text`)?.length ?? 0) - item.text.length;
        return { json: { ...base, text: item.text }, text: item.text, ...(lost > 0 ? { lost } : {}) };
      }
      const blob = "blob" in item && typeof item.blob === "string" ? item.blob : "";
      const length = clip?.cuts.find((x) => x.path.join("/") === `contents/${i}/blob`)?.length ?? blob.length;
      const bytes = Math.floor((length * 3) / 4);
      return {
        json: { ...base, bytes },
        text: `[binary resource ${item.uri}: ${item.mimeType ?? "unknown type"}, ${bytes} bytes]`,
      };
    });
    const dropped =
      clip?.drops.filter((d) => d.path.join("/") === "contents").reduce((n, d) => n + d.count, 0) ?? 0;
    const { text, json } = budgetItems(items, c.settings.maxOutputBytes, dropped);
    return { text, contents: json };
  } catch (err) {
    throw failureOf(err, (t) => c.redactor.mask(t), c.settings.maxOutputBytes);
  }
}
