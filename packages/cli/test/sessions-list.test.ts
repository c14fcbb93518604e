// `agent sessions list` tells a live session from one whose kernel was killed (the
// writer lock of issue 15 says which), and session ids can be typed as unique prefixes.
import { join } from "node:path";
import { createSession } from "@pluggableharness/state";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let dir: string;
const LIVE = "01JAAAAAAAAAAAAAAAAAAAAAA1";
const KILLED = "01JAAAAAAAAAAAAAAAAAAAAAA2";
const OTHER = "01KBBBBBBBBBBBBBBBBBBBBBB3";

beforeAll(() => {
  sb = sandbox();
  dir = join(sb.env["XDG_STATE_HOME"]!, "agent", "sessions");
});
afterAll(() => sb?.cleanup());

describe("agent sessions list", () => {
  it("shows a RUNNING session with no live kernel as interrupted", async () => {
    // This process plays the live kernel: it keeps the writer (and its lock) open.
    const live = createSession({ sessionId: LIVE, profile: "default", depth: 0 }, { dir, log: () => {} });
    // A kernel killed mid-session: the file says RUNNING, nobody holds the lock.
    createSession({ sessionId: KILLED, profile: "default", depth: 0 }, { dir, log: () => {} }).close();
    createSession({ sessionId: OTHER, profile: "default", depth: 0 }, { dir, log: () => {} }).close();
    try {
      const r = await agent(["sessions", "list", "--json"], { cwd: sb.home, env: sb.env });
      expect(r.code).toBe(0);
      const rows = JSON.parse(r.stdout) as { session_id: string; status: string }[];
      const status = Object.fromEntries(rows.map((x) => [x.session_id, x.status]));
      expect(status[LIVE]).toBe("running");
      expect(status[KILLED]).toBe("interrupted");
      const table = await agent(["sessions", "list"], { cwd: sb.home, env: sb.env });
      expect(table.stdout).toMatch(new RegExp(`${KILLED}.*interrupted`));
      expect(table.stdout).toMatch(new RegExp(`${LIVE}.*running`));
    } finally {
      live.close();
    }
  });

  it("accepts a unique prefix of an id, in any case, and names the candidates of an ambiguous one", async () => {
    const shown = await agent(["sessions", "show", "01kb"], { cwd: sb.home, env: sb.env });
    expect(shown.code).toBe(0);
    const ambiguous = await agent(["sessions", "show", "01JAAA"], { cwd: sb.home, env: sb.env });
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain('"01JAAA" is the start of 2 sessions (');
    expect(ambiguous.stderr).toContain(LIVE);
    expect(ambiguous.stderr).toContain(KILLED);
    const none = await agent(["sessions", "show", "01ZZ"], { cwd: sb.home, env: sb.env });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('no session id starts with "01ZZ"');
  });
});
