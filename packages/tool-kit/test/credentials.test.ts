// Credential stores (src/credentials.ts) and the jail's refusal of them: the default list
// hides ~/.ssh, ~/.aws and the rest, as written and through symlinks; deny_read adds,
// allow_read gives back, the most specific entry wins; variables that point at a store
// or a socket elsewhere count; bad entries are configuration errors naming the entry.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { hiddenBy, maskPlan, readRulesFrom } from "../src/credentials.ts";
import { ToolFailure } from "../src/events.ts";
import { Jail } from "../src/jail.ts";

const base = realpathSync(mkdtempSync(join(tmpdir(), "credentials-test-")));
afterAll(() => rmSync(base, { recursive: true, force: true }));
const home = join(base, "home");
mkdirSync(join(home, ".ssh"), { recursive: true });
writeFileSync(join(home, ".ssh", "id_rsa"), "key");
writeFileSync(join(home, ".ssh", "known_hosts"), "hosts");
writeFileSync(join(home, ".npmrc"), "//registry/:_authToken=x");
mkdirSync(join(home, "project"), { recursive: true });
// ~/.aws lives elsewhere, through a symlink.
mkdirSync(join(base, "vaults", "aws"), { recursive: true });
writeFileSync(join(base, "vaults", "aws", "credentials"), "secret");
symlinkSync(join(base, "vaults", "aws"), join(home, ".aws"));

const rules = (deny: string[] = [], allow: string[] = [], env: Record<string, string> = {}) => {
  const r = readRulesFrom(
    { deny_read: deny, allow_read: allow },
    { home, env, setting: "allow_read in the x block" },
  );
  expect(r.problems).toEqual([]);
  return r.rules;
};

describe("credential rules", () => {
  it("hide the default stores, as written and through a symlink, and nothing else", () => {
    const r = rules();
    expect(hiddenBy(r, join(home, ".ssh", "id_rsa"))).toBe(join(home, ".ssh"));
    expect(hiddenBy(r, join(home, ".ssh"))).toBe(join(home, ".ssh"));
    expect(hiddenBy(r, join(home, ".aws", "credentials"))).toBe(join(home, ".aws"));
    expect(hiddenBy(r, join(base, "vaults", "aws", "credentials"))).toBe(join(base, "vaults", "aws"));
    expect(hiddenBy(r, join(home, ".npmrc"))).toBe(join(home, ".npmrc"));
    expect(hiddenBy(r, "/etc/shadow")).toBe("/etc/shadow");
    expect(hiddenBy(r, join(home, "project", "src.ts"))).toBeUndefined();
    expect(hiddenBy(r, join(home, ".sshx"))).toBeUndefined();
    expect(hiddenBy(r, home)).toBeUndefined();
  });

  it("take deny_read and allow_read; the most specific entry wins, an allow of the same path too", () => {
    const r = rules(["~/project/secrets", "/opt/keys/"], ["~/.npmrc", "~/.ssh/known_hosts"]);
    expect(hiddenBy(r, join(home, "project", "secrets", "a"))).toBe(join(home, "project", "secrets"));
    expect(hiddenBy(r, "/opt/keys/k")).toBe("/opt/keys");
    expect(hiddenBy(r, join(home, ".npmrc"))).toBeUndefined();
    expect(hiddenBy(r, join(home, ".ssh", "known_hosts"))).toBeUndefined();
    expect(hiddenBy(r, join(home, ".ssh", "id_rsa"))).toBe(join(home, ".ssh"));
    // An allow above a default does not lift the more specific default.
    expect(hiddenBy(rules([], ["~"]), join(home, ".ssh", "id_rsa"))).toBe(join(home, ".ssh"));
    // A deny inside an allow inside a deny.
    const nested = rules(["~/.ssh/known_hosts/x"], ["~/.ssh/known_hosts"]);
    expect(hiddenBy(nested, join(home, ".ssh", "known_hosts", "x"))).toBe(
      join(home, ".ssh", "known_hosts", "x"),
    );
  });

  it("follow the variables that point at a store or an agent socket elsewhere", () => {
    const r = rules([], [], {
      KUBECONFIG: "/srv/kube/a:/srv/kube/b",
      SSH_AUTH_SOCK: "/tmp/ssh-x/agent.1",
      XDG_RUNTIME_DIR: "/run/user/1000",
      DOCKER_HOST: "unix:///srv/docker.sock",
      DBUS_SESSION_BUS_ADDRESS: "unix:path=/srv/bus,guid=1",
      GOOGLE_APPLICATION_CREDENTIALS: "relative/ignored.json",
    });
    for (const p of [
      "/srv/kube/a",
      "/srv/kube/b",
      "/tmp/ssh-x/agent.1",
      "/run/user/1000/bus",
      "/run/user/1000/systemd/private",
      "/srv/docker.sock",
      "/srv/bus",
    ])
      expect(hiddenBy(r, p), p).toBe(p);
    expect(hiddenBy(r, "/run/user/1000/other")).toBeUndefined();
  });

  it("refuse entries that are neither absolute nor ~/, and the root", () => {
    const { problems } = readRulesFrom(
      { deny_read: ["relative/x", "/", ""], allow_read: "~/.ssh" },
      { home, setting: "s" },
    );
    expect(problems.map((p) => [p.attributePath, p.summary, p.detail])).toEqual([
      [["deny_read"], "deny_read entries must be absolute paths or start with ~/", '"relative/x" is neither'],
      [["deny_read"], "deny_read cannot name the root directory", ""],
      [["deny_read"], "deny_read entries must be absolute paths or start with ~/", '"" is neither'],
      [["allow_read"], "allow_read must be a list of paths", ""],
    ]);
  });

  it("plan the sandbox's mounts: hide a directory, blank a file, show an allowed file inside", () => {
    const plan = maskPlan(rules([], ["~/.ssh/known_hosts"]));
    const mine = plan.filter((m) => m.path.startsWith(base));
    expect(mine).toEqual([
      { path: join(home, ".ssh"), kind: "dir", hide: true },
      { path: join(base, "vaults", "aws"), kind: "dir", hide: true },
      { path: join(home, ".npmrc"), kind: "file", hide: true },
      { path: join(home, ".ssh", "known_hosts"), kind: "file", hide: false },
    ]);
  });
});

describe("the jail", () => {
  it("refuses a credential store inside a root, naming the setting; allow_read opens it", async () => {
    const jail = await Jail.create([home], { readRules: rules() });
    const refused = (p: string, cwd = home) =>
      jail.resolve(p, cwd).then(
        () => undefined,
        (e: ToolFailure) => e,
      );
    for (const p of [".ssh/id_rsa", join(home, ".aws", "credentials"), "project/../.npmrc", ".ssh"]) {
      const e = await refused(p);
      expect(e, p).toBeInstanceOf(ToolFailure);
      expect(e?.category).toBe("permission_denied");
      expect(e?.message).toMatch(
        /a credential store the tools do not read \(deny_read\); to allow it, add "~\/\.\w+" to allow_read in the x block/,
      );
    }
    // Through a link the model made inside the project.
    symlinkSync(join(home, ".ssh"), join(home, "project", "innocent"));
    expect((await refused("innocent/id_rsa", join(home, "project")))?.message).toContain("is in ~/.ssh");
    // Writes are refused too: nothing lands in ~/.ssh/authorized_keys.
    expect(await refused(".ssh/authorized_keys")).toBeInstanceOf(ToolFailure);
    expect((await jail.resolve("project/x.ts", home)).exists).toBe(false);
    // A walk (glob, grep) leaves a store out as it reaches it, not a sibling.
    expect(jail.skipInWalk(join(home, ".ssh"))).toBe(true);
    expect(jail.skipInWalk(join(home, ".aws"))).toBe(true);
    expect(jail.skipInWalk(join(home, "project"))).toBe(false);
    const open = await Jail.create([home], { readRules: rules([], ["~/.ssh"]) });
    expect((await open.resolve(".ssh/id_rsa", home)).exists).toBe(true);
  });
});
