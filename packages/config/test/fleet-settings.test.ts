// settings { fleet { ... } }: the engines of `agent batch` / `agent worker`. The URLs are
// secrets (they carry passwords): only env("NAME") is accepted, the value is read when a
// fleet command resolves it, and every mistake is reported at its file:line:col.
import { describe, expect, it } from "vitest";
import { loadConfigSource, resolveFleetUrls } from "../src/index.ts";

const source = (body: string) => `settings {
  fleet {
${body}
  }
}
`;

describe("fleet settings", () => {
  it("keep the variables' names, and resolve them only on request", () => {
    const r = loadConfigSource(
      source('    redis_url    = env("FLEET_REDIS")\n    postgres_url = env("FLEET_PG")'),
      "agent.hcl",
      "/p",
    );
    if (!r.ok) throw new Error(JSON.stringify(r.diagnostics));
    expect(r.config.settings.fleet?.redis_url.name).toBe("FLEET_REDIS");
    expect(r.config.settings.fleet?.postgres_url.name).toBe("FLEET_PG");
    // Nothing resolved lives in the configuration.
    expect(JSON.stringify(r.config.settings)).not.toContain("redis://");
    const urls = resolveFleetUrls(r.config, {
      FLEET_REDIS: "redis://:pw@127.0.0.1:6379",
      FLEET_PG: "postgres://u:pw@h/db",
    });
    expect(urls).toEqual({
      ok: true,
      redisUrl: "redis://:pw@127.0.0.1:6379",
      postgresUrl: "postgres://u:pw@h/db",
    });
  });

  it("refuse a literal URL at its line and column", () => {
    const r = loadConfigSource(
      source('    redis_url    = "redis://:hunter2@db:6379"\n    postgres_url = env("FLEET_PG")'),
      "agent.hcl",
      "/p",
    );
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const d = r.diagnostics.find((x) => x.category === "secret_literal");
    expect(d).toMatchObject({ file: "agent.hcl", line: 3, column: 20 });
    expect(d?.summary).toContain("settings.fleet.redis_url");
    // The literal itself is not repeated in the message.
    expect(JSON.stringify(r.diagnostics)).not.toContain("hunter2");
  });

  it("require both URLs and reject unknown attributes", () => {
    const r = loadConfigSource(source('    redis_url = env("R")\n    queue = "x"'), "agent.hcl", "/p");
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const cats = r.diagnostics.map((d) => `${d.category}@${d.line}`);
    expect(cats).toContain("unknown_attribute@4");
    expect(
      r.diagnostics.some((d) => d.category === "missing_attribute" && d.detail.includes("postgres_url")),
    ).toBe(true);
  });

  it("name the unset variable where it is written, and the missing block by file", () => {
    const r = loadConfigSource(
      source('    redis_url    = env("FLEET_REDIS")\n    postgres_url = env("FLEET_PG")'),
      "agent.hcl",
      "/p",
    );
    if (!r.ok) throw new Error("unexpected");
    const unset = resolveFleetUrls(r.config, { FLEET_REDIS: "redis://x" });
    expect(unset.ok).toBe(false);
    if (unset.ok) return;
    expect(unset.diagnostics).toHaveLength(1);
    expect(unset.diagnostics[0]).toMatchObject({ category: "env_unset", file: "agent.hcl", line: 4 });
    expect(unset.diagnostics[0]!.detail).toContain("FLEET_PG");

    const none = loadConfigSource("settings {}\n", "agent.hcl", "/p");
    if (!none.ok) throw new Error("unexpected");
    const missing = resolveFleetUrls(none.config, {});
    expect(missing.ok).toBe(false);
    if (!missing.ok)
      expect(missing.diagnostics[0]).toMatchObject({ file: "agent.hcl", summary: "No fleet configured" });
  });
});
