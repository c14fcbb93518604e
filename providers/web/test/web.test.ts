// web_fetch and web_search over the real plugin boundary, against loopback servers
// written here: a small website and a fake of the Brave Search API.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { runConformance, ToolHarness, TRANSPORTS } from "@pluggableharness/conformance";
import { ToolErrorCategory } from "@pluggableharness/protocol/tool";
import type { PluginLogRecord } from "@pluggableharness/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { htmlToText } from "../src/html.ts";
import { isPrivateAddress } from "../src/net.ts";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const KEY = "bsk-test-9f8e7d6c5b4a";

const PAGE = `<!doctype html><html><head><title>Test &amp; Page</title><style>body{color:red}</style>
<script>var secret = "do not show";</script></head>
<body><nav><a href="/home">Home</a></nav>
<h1>Hello&nbsp;world</h1>
<p>First <strong>bold</strong> and <em>soft</em> text with a <a href="/docs?a=1&amp;b=2">link</a>.</p>
<ul><li>one</li><li>two <code>x()</code></li></ul>
<pre><code>line 1
  line 2</code></pre>
<!-- a comment --><p>&lt;tag&gt; &#169; &#x263A;</p></body></html>`;

let site: Server;
let siteUrl: string;
const methods: string[] = [];
let search: Server;
let searchUrl: string;
const searchRequests: { url: string; token: string | undefined }[] = [];
const logs: PluginLogRecord[] = [];
let h: ToolHarness;

function listen(server: Server): Promise<string> {
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    ),
  );
}

function siteHandler(req: IncomingMessage, res: ServerResponse): void {
  methods.push(req.method ?? "");
  const path = new URL(req.url ?? "/", "http://x").pathname;
  switch (path) {
    case "/page.html":
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(PAGE);
      return;
    case "/plain.txt":
      res.writeHead(200, { "content-type": "text/plain" }).end("just text\n");
      return;
    case "/gzip":
      res
        .writeHead(200, { "content-type": "text/plain", "content-encoding": "gzip" })
        .end(gzipSync("zipped text"));
      return;
    case "/big":
      res.writeHead(200, { "content-type": "text/plain" }).end("y".repeat(50_000));
      return;
    case "/slow":
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("partial");
      return; // never ends
    case "/redirect":
      res.writeHead(302, { location: "/page.html" }).end();
      return;
    case "/loop":
      res.writeHead(302, { location: "/loop" }).end();
      return;
    case "/gone":
      res.writeHead(404).end("nope");
      return;
    case "/broken":
      res.writeHead(503).end("down");
      return;
    case "/image.png":
      res.writeHead(200, { "content-type": "image/png" }).end(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
      return;
    default:
      res.writeHead(404).end();
  }
}

function searchHandler(req: IncomingMessage, res: ServerResponse): void {
  const token = req.headers["x-subscription-token"] as string | undefined;
  searchRequests.push({ url: req.url ?? "", token });
  const url = new URL(req.url ?? "/", "http://x");
  if (url.pathname !== "/res/v1/web/search") return void res.writeHead(404).end();
  if (token !== KEY)
    return void res.writeHead(401, { "content-type": "application/json" }).end('{"type":"ErrorResponse"}');
  const q = url.searchParams.get("q");
  if (q === "rate limited") return void res.writeHead(429, { "retry-after": "7" }).end("{}");
  if (q === "server error") return void res.writeHead(500).end("{}");
  res.writeHead(200, { "content-type": "application/json" }).end(
    JSON.stringify({
      type: "search",
      web: {
        results: [
          {
            title: "Node.js <strong>docs</strong>",
            url: "https://nodejs.org/docs",
            description: "The <strong>Node</strong> &amp; docs",
            age: "2 days ago",
          },
          { title: "Blog", url: "https://blog.example.com/post", description: "A post" },
          { title: "Spam", url: "https://spam.test/x", description: "buy" },
        ],
      },
    }),
  );
}

beforeAll(async () => {
  site = createServer(siteHandler);
  siteUrl = await listen(site);
  search = createServer(searchHandler);
  searchUrl = await listen(search);
  h = new ToolHarness({ executable: MAIN, name: "web", logSink: (r) => logs.push(r) });
  await h.configure({
    allow_private_network: true,
    fetch_timeout_ms: 500,
    max_bytes: 10_000,
    search_api_key: KEY,
    search_base_url: searchUrl,
  });
});

afterAll(async () => {
  await h.close();
  site.closeAllConnections();
  site.close();
  search.close();
});

const fetchUrl = (path: string, extra: Record<string, unknown> = {}) =>
  h.invoke("web_fetch", { url: `${siteUrl}${path}`, ...extra } as never);

describe("HTML reduction", () => {
  it("keeps structure as Markdown and drops scripts, styles and comments", () => {
    const { title, text } = htmlToText(PAGE, "https://example.org/a/b.html");
    expect(title).toBe("Test & Page");
    expect(text).not.toMatch(/secret|color:red|comment/);
    expect(text).toContain("# Hello world");
    expect(text).toContain("First **bold** and _soft_ text with a [link](https://example.org/docs?a=1&b=2).");
    expect(text).toContain("- one\n- two `x()`");
    expect(text).toContain("```\nline 1\n  line 2\n```");
    expect(text).toContain("<tag> © ☺");
  });

  it("keeps tables, ordered and nested lists, bare <pre>, images; drops unsafe link targets", () => {
    const { text } = htmlToText(
      `<table><tr><th>name</th><th>size</th></tr><tr><td>a.txt</td><td>3 <b>KB</b></td></tr></table>
<ol start="3"><li>third</li><li>fourth<ul><li>inner</li></ul></li></ol>
<pre>raw  spaced
text</pre><p><img src="x.png" alt="a chart"><img src="y.png"></p>
<p><a href="javascript:alert(1)">js</a> <a href="mailto:a@b.c">mail</a> <a href="#top">top</a> <a href="ftp://h/f">ftp</a></p>
<p>1. not a list * and _not_ escaped</p>`,
      "https://example.org/",
    );
    expect(text).toContain("name | size\na.txt | 3 **KB**");
    expect(text).toContain("3. third\n4. fourth\n  - inner");
    expect(text).toContain("```\nraw  spaced\ntext\n```");
    expect(text).toContain("[image: a chart]");
    expect(text).not.toContain("y.png");
    expect(text).toContain("js mail top ftp");
    expect(text).not.toMatch(/javascript:|mailto:|\]\(/);
    expect(text).toContain("1. not a list * and _not_ escaped");
  });

  it("knows private addresses", () => {
    for (const ip of [
      "127.0.0.1",
      "10.1.2.3",
      "172.20.0.1",
      "192.168.1.1",
      "169.254.169.254",
      "::1",
      "fd00::1",
      "::ffff:127.0.0.1",
    ]) {
      expect(isPrivateAddress(ip), ip).toBe(true);
    }
    for (const ip of ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "172.32.0.1"])
      expect(isPrivateAddress(ip), ip).toBe(false);
  });
});

describe("web_fetch", () => {
  it("fetches HTML as readable text with GET only, following redirects", async () => {
    methods.length = 0;
    const res = await fetchUrl("/redirect");
    expect(res.result).toMatchObject({
      status: 200,
      final_url: `${siteUrl}/page.html`,
      title: "Test & Page",
      truncated: false,
    });
    expect(res.result!["content"]).toContain(`[link](${siteUrl}/docs?a=1&b=2)`);
    expect(methods).toEqual(["GET", "GET"]);
    const raw = await fetchUrl("/page.html", { raw: true });
    expect(raw.result!["content"]).toBe(PAGE);
  });

  it("returns text types as they are, decompressing them", async () => {
    expect((await fetchUrl("/plain.txt")).result!["content"]).toBe("just text\n");
    expect((await fetchUrl("/gzip")).result!["content"]).toBe("zipped text");
  });

  it("enforces size and time limits with explicit notices and errors", async () => {
    const big = await fetchUrl("/big");
    expect(big.result).toMatchObject({ truncated: true, bytes: 10_000 });
    expect(big.result!["content"]).toMatch(/\[truncated: the response exceeded 10000 bytes\]$/);
    const slow = await fetchUrl("/slow");
    expect(slow.error?.category).toBe(ToolErrorCategory.TIMEOUT);
    expect(slow.error?.retryable).toBe(true);
  });

  it("classifies failures", async () => {
    expect((await fetchUrl("/gone")).error?.category).toBe(ToolErrorCategory.NOT_FOUND);
    const broken = await fetchUrl("/broken");
    expect(broken.error).toMatchObject({ category: ToolErrorCategory.EXECUTION_FAILED, retryable: true });
    expect((await fetchUrl("/image.png")).error?.category).toBe(ToolErrorCategory.EXECUTION_FAILED);
    expect((await fetchUrl("/loop")).error?.message).toMatch(/more than 5 redirects/);
    const bad = await h.invoke("web_fetch", { url: "file:///etc/passwd" });
    expect(bad.error?.category).toBe(ToolErrorCategory.INVALID_ARGUMENTS);
    expect((await h.invoke("web_fetch", { url: "not a url" })).error?.category).toBe(
      ToolErrorCategory.INVALID_ARGUMENTS,
    );
  });

  it("refuses private addresses by default and hosts outside allowed_domains", async () => {
    const strict = new ToolHarness({ executable: MAIN, name: "web-strict" });
    try {
      await strict.configure({});
      const local = await strict.invoke("web_fetch", { url: `${siteUrl}/plain.txt` });
      expect(local.error?.category).toBe(ToolErrorCategory.PERMISSION_DENIED);
      const localhost = await strict.invoke("web_fetch", {
        url: `${siteUrl.replace("127.0.0.1", "localhost")}/plain.txt`,
      });
      expect(localhost.error?.category).toBe(ToolErrorCategory.PERMISSION_DENIED);
      // The reported defect: the IPv4-mapped form reached the loopback site.
      const mapped = await strict.invoke("web_fetch", {
        url: `${siteUrl.replace("127.0.0.1", "[::ffff:127.0.0.1]")}/plain.txt`,
      });
      expect(mapped.error?.category).toBe(ToolErrorCategory.PERMISSION_DENIED);
      await strict.configure({ allow_private_network: true, allowed_domains: ["example.com"] });
      const elsewhere = await strict.invoke("web_fetch", { url: `${siteUrl}/plain.txt` });
      expect(elsewhere.error?.category).toBe(ToolErrorCategory.PERMISSION_DENIED);
      expect(elsewhere.error?.message).toMatch(/allowed_domains/);
    } finally {
      await strict.close();
    }
  });
});

describe("web_search", () => {
  it("queries the Brave API shape with the key in its header and returns clean results", async () => {
    searchRequests.length = 0;
    const res = await h.invoke("web_search", { query: "node docs", count: 2 });
    expect(searchRequests).toHaveLength(1);
    expect(searchRequests[0]!.token).toBe(KEY);
    expect(searchRequests[0]!.url).toBe("/res/v1/web/search?q=node+docs&count=20");
    expect(res.result).toEqual({
      query: "node docs",
      results: [
        {
          title: "Node.js docs",
          url: "https://nodejs.org/docs",
          snippet: "The Node & docs",
          age: "2 days ago",
        },
        { title: "Blog", url: "https://blog.example.com/post", snippet: "A post" },
      ],
    });
    const filtered = await h.invoke("web_search", { query: "x", allowed_domains: ["example.com"] });
    expect((filtered.result!["results"] as { url: string }[]).map((r) => r.url)).toEqual([
      "https://blog.example.com/post",
    ]);
    const blocked = await h.invoke("web_search", {
      query: "x",
      blocked_domains: ["spam.test", "nodejs.org"],
    });
    expect((blocked.result!["results"] as { url: string }[]).map((r) => r.url)).toEqual([
      "https://blog.example.com/post",
    ]);
  });

  it("classifies API failures and never reveals the key", async () => {
    const limited = await h.invoke("web_search", { query: "rate limited" });
    expect(limited.error).toMatchObject({ category: ToolErrorCategory.EXECUTION_FAILED, retryable: true });
    expect(limited.error?.details).toMatchObject({ status: 429, retry_after: "7" });
    expect((await h.invoke("web_search", { query: "server error" })).error?.retryable).toBe(true);
    expect((await h.invoke("web_search", { query: "  " })).error?.category).toBe(
      ToolErrorCategory.INVALID_ARGUMENTS,
    );

    const wrongKey = new ToolHarness({
      executable: MAIN,
      name: "web-wrong-key",
      logSink: (r) => logs.push(r),
    });
    try {
      // The endpoint on loopback is refused like any private address...
      await wrongKey.configure({ search_api_key: "bsk-wrong-0000", search_base_url: searchUrl });
      const guarded = await wrongKey.invoke("web_search", { query: "x" });
      expect(guarded.error?.category).toBe(ToolErrorCategory.PERMISSION_DENIED);
      expect(guarded.error?.message).toMatch(/private network/);
      // ...and reached with allow_private_network, where the wrong key is refused by the API.
      await wrongKey.configure({
        search_api_key: "bsk-wrong-0000",
        search_base_url: searchUrl,
        allow_private_network: true,
      });
      const denied = await wrongKey.invoke("web_search", { query: "x" });
      expect(denied.error?.category).toBe(ToolErrorCategory.PERMISSION_DENIED);
      expect(denied.error?.message).not.toMatch(/private network/);
      expect(JSON.stringify([guarded.error, denied.error])).not.toContain("bsk-wrong-0000");
      await wrongKey.configure({});
      const unset = await wrongKey.invoke("web_search", { query: "x" });
      expect(unset.error?.category).toBe(ToolErrorCategory.EXECUTION_FAILED);
      expect(unset.error?.message).toMatch(/search_api_key/);
      // An omitted attribute reaches Configure as its zero value "": unset, not an error.
      await wrongKey.configure({ search_api_key: "" });
      const zero = await wrongKey.invoke("web_search", { query: "x" });
      expect(zero.error?.category).toBe(ToolErrorCategory.EXECUTION_FAILED);
      expect(zero.error?.message).toMatch(/search_api_key/);
    } finally {
      await wrongKey.close();
    }
    const everything = JSON.stringify([logs, h.kernel.logs]);
    expect(everything).not.toContain(KEY);
    expect(everything).not.toContain("bsk-wrong-0000");
  });

  it("declares the key sensitive in its config schema", async () => {
    const schema = await h.client.getSchema({});
    const key = schema.configSchema?.attributes.find((a) => a.name === "search_api_key");
    expect(key).toMatchObject({ sensitive: true, required: false });
    expect(key?.defaultJson).toBeUndefined();
  });
});

describe("conformance", () => {
  it.each(TRANSPORTS)(
    "passes agent conform's tool-provider checks, with a secret configured over the %s transport",
    async (isolation) => {
      const report = await runConformance({
        isolation,
        executable: MAIN,
        config: {
          allow_private_network: true,
          search_api_key: KEY,
          search_base_url: searchUrl,
          fetch_timeout_ms: 500,
        },
        samples: [
          { tool: "web_fetch", arguments: { url: `${siteUrl}/page.html` }, expect: "result" },
          { tool: "web_fetch", arguments: { url: `${siteUrl}/gone` }, expect: "not_found" },
          { tool: "web_search", arguments: { query: "node" }, expect: "result" },
          { tool: "web_search", arguments: { query: "rate limited" }, expect: "execution_failed" },
        ],
      });
      expect(report.results.filter((r) => r.status === "fail")).toEqual([]);
      expect(report.exitCode).toBe(0);
      expect(report.isolation).toBe(isolation);
    },
  );
});
