// web_search: the Brave Search web search API.
//   GET {search_base_url}/res/v1/web/search?q=<query>&count=<n>
//   headers: Accept: application/json, X-Subscription-Token: <search_api_key>
//   answer:  { "web": { "results": [ { "title", "url", "description", "age"? } ] } }
// The key travels only in that header; it never appears in results, errors or logs.
import { r, s, type ToolDefinition, ToolFailure } from "@pluggableharness/tool-kit";
import { hostAllowed, settings } from "./config.ts";
import { decodeEntities } from "./html.ts";
import { httpGet } from "./net.ts";

const MAX_COUNT = 20;

interface SearchArgs {
  query: string;
  count?: number;
  allowed_domains?: string[];
  blocked_domains?: string[];
}

interface BraveResult {
  title?: unknown;
  url?: unknown;
  description?: unknown;
  age?: unknown;
}

function plain(text: unknown): string {
  return typeof text === "string" ? decodeEntities(text.replace(/<[^>]*>/g, "")).trim() : "";
}

export const webSearchTool: ToolDefinition<SearchArgs> = {
  name: "web_search",
  kind: "data_source",
  risk: "read_only",
  description: "Search the web; returns title, URL and snippet per result.",
  input: s.object(
    {
      query: s.string(),
      count: s.integer(`At most ${MAX_COUNT}.`),
      allowed_domains: s.array(s.string()),
      blocked_domains: s.array(s.string()),
    },
    ["query"],
  ),
  output: s.object(
    {
      query: s.string(),
      results: s.array(
        s.object(
          {
            title: s.string(),
            url: s.string(),
            snippet: s.string(),
            age: s.string("How old the page is, when known."),
          },
          ["title", "url", "snippet"],
        ),
      ),
    },
    ["query", "results"],
  ),
  streaming: false,
  concurrency: { safe: true },
  defaultTimeoutMs: 20_000,
  idempotent: true,

  async invoke(args, ctx) {
    const cfg = settings;
    const query = args.query.trim();
    if (query === "") throw new ToolFailure("invalid_arguments", "query is empty");
    const count = args.count ?? 10;
    if (count < 1 || count > MAX_COUNT)
      throw new ToolFailure("invalid_arguments", `count must be 1..${MAX_COUNT}`);
    if (!cfg.searchApiKey) {
      throw new ToolFailure(
        "execution_failed",
        "web_search is not set up: the provider block has no search_api_key",
      );
    }
    const url = new URL(
      "res/v1/web/search",
      cfg.searchBaseUrl.href.endsWith("/") ? cfg.searchBaseUrl : `${cfg.searchBaseUrl.href}/`,
    );
    url.searchParams.set("q", query);
    url.searchParams.set("count", String(MAX_COUNT));
    const res = await httpGet(url, {
      timeoutMs: cfg.searchTimeoutMs,
      maxBytes: 2 * 1024 * 1024,
      maxRedirects: 0,
      // The same guard as web_fetch: a search endpoint on a private network (a local
      // SearXNG, a test fake) needs allow_private_network like any other private address.
      allowPrivateNetwork: cfg.allowPrivateNetwork,
      signal: ctx.signal,
      headers: {
        accept: "application/json",
        "accept-encoding": "gzip",
        "user-agent": cfg.userAgent,
        "x-subscription-token": cfg.searchApiKey,
      },
    });
    if (res.status === 401 || res.status === 403) {
      throw new ToolFailure(
        "permission_denied",
        `the search API rejected the configured key (HTTP ${res.status})`,
        {
          details: { status: res.status },
        },
      );
    }
    if (res.status === 429) {
      const retryAfter = res.headers["retry-after"];
      throw new ToolFailure("execution_failed", "the search API rate limit was hit", {
        retryable: true,
        details: { status: 429, ...(retryAfter ? { retry_after: String(retryAfter) } : {}) },
      });
    }
    if (res.status !== 200) {
      throw new ToolFailure("execution_failed", `the search API answered HTTP ${res.status}`, {
        retryable: res.status >= 500,
        details: { status: res.status },
      });
    }
    let parsed: { web?: { results?: BraveResult[] } };
    try {
      parsed = JSON.parse(res.body.toString("utf8"));
    } catch {
      throw new ToolFailure("execution_failed", "the search API answered with something that is not JSON", {
        retryable: true,
      });
    }
    const allowed = args.allowed_domains?.map((d) => d.toLowerCase());
    const blocked = args.blocked_domains?.map((d) => d.toLowerCase()) ?? [];
    const results = (parsed.web?.results ?? [])
      .filter((x) => typeof x.url === "string")
      .filter((x) => {
        let host: string;
        try {
          host = new URL(x.url as string).hostname;
        } catch {
          return false;
        }
        return (!allowed || hostAllowed(host, allowed)) && !hostAllowed(host, blocked);
      })
      .slice(0, count)
      .map((x) => ({
        title: plain(x.title),
        url: x.url as string,
        snippet: plain(x.description),
        ...(typeof x.age === "string" ? { age: x.age } : {}),
      }));
    return { query, results };
  },

  render(input) {
    if (input.kind !== "tool_result" || !input.payload) return undefined;
    const results = (input.payload["results"] ?? []) as { title: string; url: string; snippet: string }[];
    return r.collapsible(
      `${results.length} results for "${input.payload["query"]}"`,
      [
        r.list(
          results.map((x) => r.group([r.link(x.title || x.url, x.url), r.text(x.snippet, "dim")])),
          true,
        ),
      ],
      false,
    );
  },
};
