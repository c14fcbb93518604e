// The kernel's judgement of what a write would reach (protected-paths.ts): a path is
// followed through every symbolic link on it, dangling ones included, before it is
// compared with the kernel-owned paths. The project here has no agent.hcl and no .agent/,
// as a zero-config project has none: every link below points at something absent.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { followLinksSync, kernelProtectedPaths, protectedHitOf, protectedPathOf } from "../src/index.ts";

let base: string;
let project: string;
let paths: string[];
const env = () => ({ HOME: join(base, "home"), XDG_CONFIG_HOME: join(base, "home", ".config") });

beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "protected-paths-")));
  project = join(base, "project");
  mkdirSync(join(project, "sub", "deeper"), { recursive: true });
  writeFileSync(join(project, "ok.txt"), "x");
  paths = kernelProtectedPaths(project, env());
  const link = (target: string, name: string) => symlinkSync(target, join(project, name));
  link("agent.hcl", "cfg.txt"); // dangling, relative
  link(join(project, "agent.hcl"), "abs.txt"); // dangling, absolute
  link("b", "chain"); // chain -> b -> .agent/policy.auto.hcl
  link(".agent/policy.auto.hcl", "b");
  link(".agent", "d"); // a directory that does not exist yet
  link("../sub/../agent.hcl", "sub/up"); // relative hops
  link("d", "dd"); // a link to a directory link
  link(join(base, "home", ".config", "agent"), "gc"); // the global config directory, absent
  link(".agent/memory", "mem"); // for `..` taken physically
  link("loop2", "loop1");
  link("loop1", "loop2");
  link("ok.txt", "fine"); // an ordinary link
  link("sub", "s"); // an ordinary directory link
});

afterAll(() => rmSync(base, { recursive: true, force: true }));

describe("followLinksSync", () => {
  it("follows dangling links, chains, directory links and `..` hops", () => {
    expect(followLinksSync(join(project, "cfg.txt")).path).toBe(join(project, "agent.hcl"));
    expect(followLinksSync(join(project, "chain")).path).toBe(join(project, ".agent", "policy.auto.hcl"));
    expect(followLinksSync(join(project, "dd", "x", "y")).path).toBe(join(project, ".agent", "x", "y"));
    expect(followLinksSync(join(project, "sub", "up")).path).toBe(join(project, "agent.hcl"));
    expect(followLinksSync(join(project, "s", "deeper")).path).toBe(join(project, "sub", "deeper"));
    expect(followLinksSync(join(project, "loop1"))).toMatchObject({ loop: true });
    expect(followLinksSync(join(project, "fine"))).toEqual({ path: join(project, "ok.txt"), loop: false });
  });
});

describe("protectedPathOf", () => {
  const hit = (value: string, cwd = project) => protectedPathOf(value, cwd, paths);

  it("sees a write through a link to a protected path that does not exist yet", () => {
    expect(hit("cfg.txt")).toBe(join(project, "agent.hcl"));
    expect(hit("abs.txt")).toBe(join(project, "agent.hcl"));
    expect(hit("chain")).toBe(join(project, ".agent"));
    expect(hit("d/policy.auto.hcl")).toBe(join(project, ".agent"));
    expect(hit("dd/agent.lock.hcl")).toBe(join(project, ".agent"));
    expect(hit("sub/up")).toBe(join(project, "agent.hcl"));
    expect(hit("up", join(project, "sub"))).toBe(join(project, "agent.hcl"));
    expect(hit("gc/config.hcl")).toBe(join(base, "home", ".config", "agent"));
  });

  it("takes `..` after a link as the operating system does (a shell word)", () => {
    // Lexically mem/../policy.auto.hcl is ./policy.auto.hcl; the system goes up from .agent/memory.
    expect(hit("mem/../policy.auto.hcl")).toBe(join(project, ".agent"));
  });

  it("folds case, as a case-insensitive file system does", () => {
    expect(hit("AGENT.HCL")).toBe(join(project, "agent.hcl"));
    expect(hit(".Agent/x")).toBe(join(project, ".agent"));
  });

  it("finds the protected path through a link to the project itself", () => {
    symlinkSync(project, join(base, "alias"));
    expect(hit("agent.hcl", join(base, "alias"))).toBe(join(project, "agent.hcl"));
    expect(hit("cfg.txt", join(base, "alias"))).toBe(join(project, "agent.hcl"));
  });

  it("leaves ordinary paths and links alone", () => {
    for (const v of ["ok.txt", "fine", "s/deeper/new.txt", "new/dir/file", "agent.hcl.txt", ".agentx/y"])
      expect(hit(v), v).toBeUndefined();
  });
});

describe("protectedHitOf", () => {
  const of = (args: Record<string, unknown>) => protectedHitOf(args, project, paths);

  it("judges every path argument, patch header and command word through links", () => {
    expect(of({ path: "cfg.txt", content: "x" })).toEqual({
      path: join(project, "agent.hcl"),
      argument: "path",
    });
    expect(of({ changes: [{ path: "ok.txt", action: "move", to: "chain" }] })?.path).toBe(
      join(project, ".agent"),
    );
    expect(
      of({ patch: "*** Begin Patch\n*** Update File: ok.txt\n*** Move to: sub/up\n*** End Patch" }),
    ).toEqual({
      path: join(project, "agent.hcl"),
      argument: "patch",
    });
    expect(of({ command: "echo x > cfg.txt" })?.path).toBe(join(project, "agent.hcl"));
    expect(of({ command: "cp ok.txt d/policy.auto.hcl" })?.path).toBe(join(project, ".agent"));
    expect(of({ command: "ln ok.txt cfg.txt" })?.path).toBe(join(project, "agent.hcl"));
    expect(of({ command: "truncate -s0 chain" })?.path).toBe(join(project, ".agent"));
    // Reading through a link stays allowed.
    expect(of({ command: "cat cfg.txt" })).toBeUndefined();
  });

  it("refuses a chain of links that does not end", () => {
    expect(of({ path: "loop1", content: "x" })).toEqual({ path: "loop1", argument: "path", loop: true });
    expect(of({ command: "echo x > loop2" })).toMatchObject({ loop: true });
    expect(of({ command: "ls loop1" })).toBeUndefined();
  });
});
