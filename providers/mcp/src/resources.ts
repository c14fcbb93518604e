// MCP resources as two data sources, offered when the server declares resources:
// list_resources (resources and resource templates, paged) and read_resource (one URI).
// Reading a resource is read-only by the protocol's definition, not by the server's word.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { RiskClass, ToolKind } from "@pluggableharness/protocol/tool";
import { ToolFailure } from "@pluggableharness/tool-kit";
import type { Connection } from "./connection.ts";
import { failureOf, maskJson, type ToolSchemaInit } from "./tools.ts";

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
    return maskJson(out, (t) => c.redactor.mask(t));
  } catch (err) {
    throw failureOf(err, (t) => c.redactor.mask(t));
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
    const r = await c.client.readResource({ uri }, { signal, timeout: c.settings.toolTimeoutMs });
    const texts: string[] = [];
    const contents: JsonValue[] = r.contents.map((item) => {
      const base = { uri: item.uri, ...(item.mimeType ? { mime_type: item.mimeType } : {}) };
      if ("text" in item && typeof item.text === "string") {
        texts.push(item.text);
        return { ...base, text: item.text };
      }
      const blob = "blob" in item && typeof item.blob === "string" ? item.blob : "";
      const bytes = Math.floor((blob.length * 3) / 4);
      texts.push(`[binary resource ${item.uri}: ${item.mimeType ?? "unknown type"}, ${bytes} bytes]`);
      return { ...base, bytes };
    });
    return maskJson({ text: texts.join("\n"), contents }, (t) => c.redactor.mask(t));
  } catch (err) {
    throw failureOf(err, (t) => c.redactor.mask(t));
  }
}
