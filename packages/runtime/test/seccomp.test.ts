// The command sandbox's system-call filter (src/seccomp.ts) and what the sandboxes hold
// (src/sandbox-check.ts). The program is checked as bytes (labels resolved, the arch
// checked first, one number per denied call), then run for real: under bubblewrap with
// the filter, mount, unshare, chroot, a sysctl write, namespace clone flags, ptrace, keyctl
// and TIOCSTI fail (EPERM), clone3 with ENOSYS, an x32 call kills the process, and ordinary work
// (fork, files, an interpreter) goes on. Skipped where bubblewrap cannot run; a failure
// on CI, which installs it.
import { spawnSync } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { probeSandbox, wrap } from "../src/sandbox.ts";
import { measureSandboxes, shortfalls } from "../src/sandbox-check.ts";
import { AARCH64, ARCHES, buildFilter, DENIED_SYSCALLS, hostArch, X86_64 } from "../src/seccomp.ts";

const probe = probeSandbox();
if (!probe.ok)
  console.warn(`\n!!! SECCOMP SANDBOX TESTS SKIPPED: bubblewrap cannot run here: ${probe.reason} !!!\n`);

it.runIf(process.env["CI"] !== undefined && process.env["CI"] !== "")("CI runs the hardened sandbox", () => {
  expect(probe).toMatchObject({ ok: true, hardening: { userns: true, capDrop: true, seccomp: true } });
});

describe("the filter program", () => {
  it.each(ARCHES.map((a) => [a.nodeArch, a] as const))(
    "%s: checks the arch first, then each denied call",
    (_n, arch) => {
      const prog = buildFilter(arch);
      expect(prog.length % 8).toBe(0);
      const insn = (i: number) => ({
        code: prog.readUInt16LE(i * 8),
        jt: prog.readUInt8(i * 8 + 2),
        jf: prog.readUInt8(i * 8 + 3),
        k: prog.readUInt32LE(i * 8 + 4),
      });
      const count = prog.length / 8;
      // ld [4] (arch); jeq AUDIT_ARCH, next, else kill.
      expect(insn(0)).toEqual({ code: 0x20, jt: 0, jf: 0, k: 4 });
      expect(insn(1)).toMatchObject({ code: 0x15, k: arch.auditArch, jt: 0 });
      expect(insn(1 + 1 + insn(1).jf)).toEqual({ code: 0x06, jt: 0, jf: 0, k: 0x80000000 });
      // Every jump lands inside the program.
      for (let i = 0; i < count; i++) {
        const x = insn(i);
        if ((x.code & 0x07) === 0x05) {
          expect(i + 1 + x.jt).toBeLessThan(count);
          expect(i + 1 + x.jf).toBeLessThan(count);
        }
      }
      // Each denied call the arch has is compared once.
      const compared = new Set<number>();
      for (let i = 3; i < count; i++) if (insn(i).code === 0x15) compared.add(insn(i).k);
      for (const name of DENIED_SYSCALLS) {
        const nr = arch.numbers[name];
        if (nr !== undefined) expect(compared.has(nr), name).toBe(true);
      }
      const numbers = Object.values(arch.numbers);
      expect(new Set(numbers).size).toBe(numbers.length);
    },
  );

  it("refuses the x32 ABI on x86_64 only", () => {
    const x = buildFilter(X86_64);
    expect(x.readUInt16LE(3 * 8)).toBe(0x35); // jge 0x40000000
    expect(x.readUInt32LE(3 * 8 + 4)).toBe(0x40000000);
    expect(buildFilter(AARCH64).readUInt16LE(3 * 8)).not.toBe(0x35);
  });
});

const PY = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
N = {"x64": dict(clone=56, clone3=435, ptrace=101, keyctl=250, ioctl=16, getpid=39, mount=165),
     "arm64": dict(clone=220, clone3=435, ptrace=117, keyctl=219, ioctl=29, getpid=172, mount=40)}[sys.argv[1]]
def sc(name, *a):
    r = libc.syscall(ctypes.c_long(N[name]), *[ctypes.c_long(x) for x in a])
    if r == 0 and name == "clone": os._exit(0)
    return "ok" if r >= 0 else os.strerror(ctypes.get_errno())
print("clone_newuser=" + sc("clone", 0x10000000 | 17, 0, 0, 0, 0))
print("clone_newns=" + sc("clone", 0x00020000 | 17, 0, 0, 0, 0))
print("clone_plain=" + sc("clone", 17, 0, 0, 0, 0))
print("clone3=" + sc("clone3", 0, 0))
print("ptrace=" + sc("ptrace", 16, os.getppid(), 0, 0))
print("keyctl=" + sc("keyctl", 0, 0))
print("tiocsti=" + sc("ioctl", 0, 0x5412, 0))
print("mount=" + sc("mount", 0, 0, 0, 0, 0))
sys.stdout.flush()
if sys.argv[1] == "x64":
    libc.syscall(ctypes.c_long(0x40000000 | N["getpid"]))
    print("x32=survived")
`;

const hasPython = spawnSync("python3", ["-c", "1"]).status === 0;
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe.skipIf(!probe.ok || hostArch() === undefined)("under bubblewrap with the filter", () => {
  const run = (script: string) => {
    if (!probe.ok) throw new Error("unreachable");
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "seccomp-test-")));
    dirs.push(dir);
    writeFileSync(join(dir, "probe.py"), PY);
    const w = wrap({ bwrap: probe.bwrap, writable: [dir], protectedPaths: [], network: false, cwd: dir }, [
      "/bin/sh",
      "-c",
      script,
    ]);
    const r = spawnSync(w.file, w.args, { encoding: "utf8", timeout: 20_000 });
    return `${r.stdout}${r.stderr}`;
  };

  it("mount, remount, unshare, chroot fail; ordinary work goes on", () => {
    const out = run(
      [
        "mount -t tmpfs none /mnt 2>/dev/null; echo mount=$?",
        "mount -o remount,rw / 2>/dev/null; echo remount=$?",
        "unshare -U true 2>/dev/null; echo unshare_user=$?",
        "unshare -m true 2>/dev/null; echo unshare_mount=$?",
        "unshare -r true 2>/dev/null; echo unshare_root=$?",
        "chroot / true 2>/dev/null; echo chroot=$?",
        // The value it reads, written back (a no-op where it works); root must not manage it.
        'v=$(cat /proc/sys/kernel/core_pattern); printf "%s\\n" "$v" > /proc/sys/kernel/core_pattern 2>/dev/null; echo sysctl=$?',
        "echo hello > note && cat note && ls / >/dev/null && echo ordinary=$?",
        "(sleep 0; echo forked) & wait",
      ].join("\n"),
    );
    for (const k of ["mount", "remount", "unshare_user", "unshare_mount", "unshare_root", "chroot", "sysctl"])
      expect(out, k).toMatch(new RegExp(`${k}=[1-9]`));
    expect(out).toContain("hello");
    expect(out).toContain("ordinary=0");
    expect(out).toContain("forked");
  });

  it.skipIf(!hasPython)("each refused call gets its error; an x32 call kills the process", () => {
    const out = run(`python3 probe.py ${process.arch}; echo "exit=$?"`);
    expect(out).toContain("clone_newuser=Operation not permitted");
    expect(out).toContain("clone_newns=Operation not permitted");
    expect(out).toContain("clone_plain=ok");
    expect(out).toContain("clone3=Function not implemented");
    expect(out).toContain("ptrace=Operation not permitted");
    expect(out).toContain("keyctl=Operation not permitted");
    expect(out).toContain("tiocsti=Operation not permitted");
    expect(out).toContain("mount=Operation not permitted");
    if (process.arch === "x64") {
      expect(out).not.toContain("x32=survived");
      expect(out).toContain("exit=159"); // 128 + SIGSYS
    }
  });

  it("measured from inside: no capability, no_new_privs, a filter, no namespace, no remount", () => {
    const m = measureSandboxes();
    expect(m?.command).toMatchObject({ ok: true });
    expect(m?.plugin).toMatchObject({ ok: true });
    if (!m?.command.ok || !m.plugin.ok) return;
    expect(m.command.measured).toEqual({
      capEff: "0000000000000000",
      capBnd: "0000000000000000",
      noNewPrivs: "1",
      seccomp: "2",
      userns: "refused",
      remount: "refused",
    });
    expect(shortfalls(m.command.measured, "command")).toEqual([]);
    expect(shortfalls(m.plugin.measured, "plugin")).toEqual([]);
  });
});

describe.skipIf(!probe.ok || hostArch() === undefined)("an older bubblewrap", () => {
  it("without --disable-userns: the probe says what is missing, the filter still refuses namespaces", () => {
    if (!probe.ok) return;
    // A bwrap 0.7 stand-in: the real one, minus --disable-userns in its help and its options.
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "old-bwrap-")));
    dirs.push(dir);
    writeFileSync(
      join(dir, "bwrap"),
      [
        "#!/bin/sh",
        `if [ "$1" = --help ]; then ${probe.bwrap} --help 2>&1 | grep -v disable-userns; exit 0; fi`,
        'for a in "$@"; do [ "$a" = --disable-userns ] && { echo "bwrap: Unknown option --disable-userns" >&2; exit 1; }; done',
        `exec ${probe.bwrap} "$@"`,
      ].join("\n"),
      { mode: 0o755 },
    );
    const saved = process.env["PATH"];
    process.env["PATH"] = `${dir}:${saved ?? ""}`;
    try {
      const old = probeSandbox(true);
      expect(old).toMatchObject({
        ok: true,
        bwrap: join(dir, "bwrap"),
        hardening: { userns: true, disableUserns: false, capDrop: true, seccomp: true },
      });
      if (!old.ok) return;
      expect(old.weaker).toEqual([
        "this bwrap has no --disable-userns (0.8+): only the system-call filter stops new namespaces",
      ]);
      const m = measureSandboxes();
      expect(m?.command).toMatchObject({ ok: true, measured: { userns: "refused", seccomp: "2" } });
    } finally {
      process.env["PATH"] = saved;
      probeSandbox(true);
    }
  });
});

describe("shortfalls", () => {
  it("names what a sandbox holds beyond the promise", () => {
    const rootWithCaps = {
      capEff: "000001fffeffffff",
      capBnd: "000001fffeffffff",
      noNewPrivs: "1",
      seccomp: "0",
      userns: "created",
      remount: "done",
    } as const;
    expect(shortfalls(rootWithCaps, "command")).toEqual([
      "effective capabilities 000001fffeffffff",
      "bounding capabilities 000001fffeffffff",
      "could remount / writable",
      "no system-call filter (seccomp mode 0)",
      "could create a user namespace",
    ]);
    // A plugin sandbox may nest one: a user namespace and no filter are expected there.
    expect(shortfalls({ ...rootWithCaps, capEff: "0", capBnd: "0", remount: "refused" }, "plugin")).toEqual(
      [],
    );
  });
});
