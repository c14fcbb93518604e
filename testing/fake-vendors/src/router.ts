// Maps a request to the vendor dialect and endpoint that should answer it.
import type { Endpoint, VendorId } from "./types.ts";

export const VENDOR_IDS: readonly VendorId[] = [
  "anthropic",
  "openai-responses",
  "openai-chat",
  "gemini",
  "xai",
  "ollama",
  "vllm",
  "lmstudio",
  "mistral",
  "deepseek",
];

export type ServerVendor = VendorId | "combined";

export interface Route {
  vendor: VendorId | undefined;
  endpoint: Endpoint;
  /** The path with any `/<vendor>` prefix of a combined server removed. */
  path: string;
  /** Gemini: the model named in the path. */
  pathModel?: string;
}

const CHAT_VENDORS = new Set<VendorId>([
  "openai-chat",
  "xai",
  "ollama",
  "vllm",
  "lmstudio",
  "mistral",
  "deepseek",
]);
const GEMINI_PATH = /\/models\/([^/:]+):(streamGenerateContent|generateContent|countTokens)$/;

export function route(server: ServerVendor, method: string, rawPath: string, chatDialect: VendorId): Route {
  let path = rawPath;
  let prefixed: VendorId | undefined;
  if (server === "combined") {
    const first = path.split("/")[1] as VendorId;
    if (VENDOR_IDS.includes(first)) {
      prefixed = first;
      path = path.slice(first.length + 1) || "/";
    }
  }
  const other: Route = { vendor: undefined, endpoint: "other", path };
  if (method !== "POST") return other;
  const serves = (v: VendorId) => server === "combined" || server === v;

  if (path.endsWith("/messages/count_tokens") && serves("anthropic"))
    return { vendor: "anthropic", endpoint: "count_tokens", path };
  if (path.endsWith("/messages") && serves("anthropic"))
    return { vendor: "anthropic", endpoint: "messages", path };

  const responsesVendor: VendorId | undefined =
    server === "combined"
      ? prefixed === "xai"
        ? "xai"
        : "openai-responses"
      : server === "xai"
        ? "xai"
        : server === "openai-responses"
          ? "openai-responses"
          : undefined;
  if (responsesVendor && path.endsWith("/responses/input_tokens"))
    return { vendor: responsesVendor, endpoint: "count_tokens", path };
  if (responsesVendor && path.endsWith("/responses"))
    return { vendor: responsesVendor, endpoint: "responses", path };

  const chatVendor: VendorId | undefined =
    server === "combined"
      ? prefixed && CHAT_VENDORS.has(prefixed)
        ? prefixed
        : chatDialect
      : CHAT_VENDORS.has(server)
        ? server
        : undefined;
  if (chatVendor && path.endsWith("/chat/completions")) return { vendor: chatVendor, endpoint: "chat", path };

  const g = GEMINI_PATH.exec(path);
  if (g && serves("gemini"))
    return {
      vendor: "gemini",
      endpoint: g[2] === "countTokens" ? "count_tokens" : "gemini",
      path,
      pathModel: decodeURIComponent(g[1]!),
    };
  return other;
}
