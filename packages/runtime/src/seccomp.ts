// The system-call filter of the command sandbox (docs/security/sandbox-privileges.md):
// a classic BPF program, built here, that bubblewrap installs with `--seccomp FD` right
// before it runs the command. It does not try to enumerate what a command may do (a
// build, a test run, a compiler all need hundreds of calls); it refuses the calls that
// change what the sandbox is — mounts, namespaces, root changes — and those that reach
// into other processes or the kernel itself (ptrace, keyrings, BPF, perf, module and kexec
// loading, open_by_handle_at). A refused call fails with EPERM, the way an unprivileged
// process sees it, so tools report "Operation not permitted" instead of dying.
//
// The program checks the audit architecture first: a filter written for x86_64 numbers
// means nothing to a call made through another ABI (i386's int 0x80, x32's bit 30), so
// those calls kill the process instead of slipping past a number that does not match.

import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// Classic BPF opcodes (linux/bpf_common.h).
const LD_W_ABS = 0x20; // BPF_LD | BPF_W | BPF_ABS: load 32 bits of seccomp_data
const JEQ_K = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const JSET_K = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const RET_K = 0x06; // BPF_RET | BPF_K

// Offsets into struct seccomp_data { int nr; u32 arch; u64 ip; u64 args[6]; }. The
// architectures handled are little-endian, so an argument's low 32 bits come first.
const NR = 0;
const ARCH = 4;
const arg = (i: number) => 16 + 8 * i;

// Return values (linux/seccomp.h).
const RET_KILL_PROCESS = 0x80000000;
const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;

/** clone() flags that create namespaces (CLONE_NEWTIME is clone3/unshare-only: it overlaps the exit signal). */
const CLONE_NAMESPACE_FLAGS =
  0x00020000 | // CLONE_NEWNS
  0x02000000 | // CLONE_NEWCGROUP
  0x04000000 | // CLONE_NEWUTS
  0x08000000 | // CLONE_NEWIPC
  0x10000000 | // CLONE_NEWUSER
  0x20000000 | // CLONE_NEWPID
  0x40000000; // CLONE_NEWNET

/** ioctls that push input into, or reconfigure, a terminal another process reads. */
const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;

/** The x32 ABI marks its system-call numbers with bit 30 on x86_64. */
const X32_SYSCALL_BIT = 0x40000000;

/** The calls refused with EPERM, by name. */
export const DENIED_SYSCALLS = [
  // changing the filesystem view: the sandbox's read-only mounts stay read-only
  "mount",
  "umount2",
  "pivot_root",
  "chroot",
  "open_tree",
  "open_tree_attr",
  "move_mount",
  "fsopen",
  "fsconfig",
  "fsmount",
  "fspick",
  "mount_setattr",
  // new or other namespaces (clone with namespace flags is handled apart)
  "unshare",
  "setns",
  // other processes' memory
  "ptrace",
  "process_vm_readv",
  "process_vm_writev",
  // the kernel's keyrings, BPF, perf, logs, modules, kexec, swap, accounting, quotas
  "keyctl",
  "add_key",
  "request_key",
  "bpf",
  "perf_event_open",
  "syslog",
  "init_module",
  "finit_module",
  "delete_module",
  "kexec_load",
  "kexec_file_load",
  "reboot",
  "swapon",
  "swapoff",
  "acct",
  "quotactl",
  "quotactl_fd",
  "lookup_dcookie",
  // files by handle bypass the mount namespace (the "shocker" escape)
  "open_by_handle_at",
  "name_to_handle_at",
  // a common building block of kernel exploits
  "userfaultfd",
  // x86 only: I/O port access, the a.out loader
  "iopl",
  "ioperm",
  "uselib",
] as const;

export type SyscallName = (typeof DENIED_SYSCALLS)[number] | "clone" | "clone3" | "ioctl";

export interface SeccompArch {
  /** Node's process.arch. */
  readonly nodeArch: string;
  /** AUDIT_ARCH_* (linux/audit.h). */
  readonly auditArch: number;
  /** Whether calls with the x32 bit set must be refused (x86_64). */
  readonly x32: boolean;
  /** System-call numbers; a name absent here does not exist on the architecture. */
  readonly numbers: Readonly<Partial<Record<SyscallName, number>>>;
}

// Numbers from the kernel's arch/x86/entry/syscalls/syscall_64.tbl and
// include/uapi/asm-generic/unistd.h (aarch64); the 4xx numbers are common to both.
const COMMON_4XX = {
  open_tree: 428,
  move_mount: 429,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  clone3: 435,
  mount_setattr: 442,
  quotactl_fd: 443,
  open_tree_attr: 467,
} as const;

export const X86_64: SeccompArch = {
  nodeArch: "x64",
  auditArch: 0xc000003e,
  x32: true,
  numbers: {
    ioctl: 16,
    clone: 56,
    ptrace: 101,
    syslog: 103,
    uselib: 134,
    pivot_root: 155,
    chroot: 161,
    acct: 163,
    mount: 165,
    umount2: 166,
    swapon: 167,
    swapoff: 168,
    reboot: 169,
    iopl: 172,
    ioperm: 173,
    init_module: 175,
    delete_module: 176,
    quotactl: 179,
    lookup_dcookie: 212,
    kexec_load: 246,
    add_key: 248,
    request_key: 249,
    keyctl: 250,
    unshare: 272,
    perf_event_open: 298,
    name_to_handle_at: 303,
    open_by_handle_at: 304,
    setns: 308,
    process_vm_readv: 310,
    process_vm_writev: 311,
    finit_module: 313,
    kexec_file_load: 320,
    bpf: 321,
    userfaultfd: 323,
    ...COMMON_4XX,
  },
};

export const AARCH64: SeccompArch = {
  nodeArch: "arm64",
  auditArch: 0xc00000b7,
  x32: false,
  numbers: {
    lookup_dcookie: 18,
    ioctl: 29,
    umount2: 39,
    mount: 40,
    pivot_root: 41,
    chroot: 51,
    quotactl: 60,
    acct: 89,
    unshare: 97,
    kexec_load: 104,
    init_module: 105,
    delete_module: 106,
    syslog: 116,
    ptrace: 117,
    reboot: 142,
    add_key: 217,
    request_key: 218,
    keyctl: 219,
    clone: 220,
    swapon: 224,
    swapoff: 225,
    perf_event_open: 241,
    name_to_handle_at: 264,
    open_by_handle_at: 265,
    setns: 268,
    process_vm_readv: 270,
    process_vm_writev: 271,
    finit_module: 273,
    bpf: 280,
    userfaultfd: 282,
    kexec_file_load: 294,
    ...COMMON_4XX,
  },
};

export const ARCHES: readonly SeccompArch[] = [X86_64, AARCH64];

/** The filter's architecture for this process, if there is one. */
export function hostArch(): SeccompArch | undefined {
  return ARCHES.find((a) => a.nodeArch === process.arch);
}

/** One instruction, with jumps to labels resolved at assembly. */
type Insn =
  | { op: number; k: number; jt?: undefined; jf?: undefined }
  | { op: number; k: number; jt: string | 0; jf: string | 0 }
  | { label: string };

/** Encodes instructions as struct sock_filter (u16 code, u8 jt, u8 jf, u32 k), little-endian. */
export function assemble(program: readonly Insn[]): Buffer {
  const labels = new Map<string, number>();
  const code: Exclude<Insn, { label: string }>[] = [];
  for (const insn of program) {
    if ("label" in insn) labels.set(insn.label, code.length);
    else code.push(insn);
  }
  const out = Buffer.alloc(code.length * 8);
  code.forEach((insn, pc) => {
    // A jump's offsets count the instructions skipped after the next one.
    const offset = (target: string | 0 | undefined): number => {
      if (target === undefined || target === 0) return 0;
      const at = labels.get(target);
      if (at === undefined) throw new Error(`seccomp: no label ${target}`);
      const off = at - (pc + 1);
      if (off < 0 || off > 255) throw new Error(`seccomp: jump to ${target} out of range (${off})`);
      return off;
    };
    out.writeUInt16LE(insn.op, pc * 8);
    out.writeUInt8(offset(insn.jt), pc * 8 + 2);
    out.writeUInt8(offset(insn.jf), pc * 8 + 3);
    out.writeUInt32LE(insn.k >>> 0, pc * 8 + 4);
  });
  return out;
}

/** The filter program for `arch`, as bubblewrap reads it from --seccomp FD. */
export function buildFilter(arch: SeccompArch): Buffer {
  const n = arch.numbers;
  const p: Insn[] = [
    // Only the native ABI: anything else would read our numbers as other calls.
    { op: LD_W_ABS, k: ARCH },
    { op: JEQ_K, k: arch.auditArch, jt: 0, jf: "kill" },
    { op: LD_W_ABS, k: NR },
  ];
  if (arch.x32) p.push({ op: JGE_K, k: X32_SYSCALL_BIT, jt: "kill", jf: 0 });
  for (const name of DENIED_SYSCALLS) {
    const nr = n[name];
    if (nr !== undefined) p.push({ op: JEQ_K, k: nr, jt: "eperm", jf: 0 });
  }
  // clone3 passes its flags in memory a filter cannot read: ENOSYS makes libc fall back
  // to clone, whose flags it can.
  if (n.clone3 !== undefined) p.push({ op: JEQ_K, k: n.clone3, jt: "enosys", jf: 0 });
  if (n.clone !== undefined) p.push({ op: JEQ_K, k: n.clone, jt: "clone", jf: 0 });
  if (n.ioctl !== undefined) p.push({ op: JEQ_K, k: n.ioctl, jt: "ioctl", jf: 0 });
  p.push(
    { op: RET_K, k: RET_ALLOW },
    // clone(flags, ...): the flags are its first argument on both architectures.
    { label: "clone" },
    { op: LD_W_ABS, k: arg(0) },
    { op: JSET_K, k: CLONE_NAMESPACE_FLAGS, jt: "eperm", jf: 0 },
    { op: RET_K, k: RET_ALLOW },
    // ioctl(fd, request, ...): the kernel reads request as 32 bits.
    { label: "ioctl" },
    { op: LD_W_ABS, k: arg(1) },
    { op: JEQ_K, k: TIOCSTI, jt: "eperm", jf: 0 },
    { op: JEQ_K, k: TIOCLINUX, jt: "eperm", jf: 0 },
    { op: RET_K, k: RET_ALLOW },
    { label: "eperm" },
    { op: RET_K, k: RET_ERRNO | EPERM },
    { label: "enosys" },
    { op: RET_K, k: RET_ERRNO | ENOSYS },
    { label: "kill" },
    { op: RET_K, k: RET_KILL_PROCESS },
  );
  return assemble(p);
}

let written: { dir: string; file: string } | undefined;

/**
 * The host's filter in a file of this process's own private directory (written once,
 * removed at exit), or undefined where there is no filter for this architecture. The
 * sandbox hides the directory from commands (sandbox.ts), so none can swap the file
 * for a weaker one before the next command opens it.
 */
export function filterFile(): { dir: string; file: string } | undefined {
  // Written again if something (a temp cleaner) removed it since.
  if (written && existsSync(written.file)) return written;
  const arch = hostArch();
  if (!arch || process.platform !== "linux") return undefined;
  const dir = mkdtempSync(join(tmpdir(), "agent-seccomp-"));
  const file = join(dir, "filter.bpf");
  writeFileSync(file, buildFilter(arch), { mode: 0o400 });
  const first = written === undefined;
  written = { dir, file };
  if (first) process.once("exit", () => written && rmSync(written.dir, { recursive: true, force: true }));
  return written;
}
