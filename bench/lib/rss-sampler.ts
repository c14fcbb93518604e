// Peak resident memory of a whole process tree, sampled from /proc in its own process so
// that the sampling never stalls the benchmark runner (which also serves the fake vendor).
//
// Protocol: the runner starts this script before it spawns the harness, waits for "ready",
// then writes the harness's pid and a newline on stdin. From then on, every INTERVAL_MS the
// sampler reads VmRSS from /proc/<pid>/status for every process known to be in the tree and
// sums them; every RESCAN_EVERY ticks it scans /proc/*/stat for processes whose parent is in
// the tree (a process stays in the tree after its parent exits, so re-parented grandchildren
// are still counted). When the root and every known descendant have exited, or on "stop",
// it prints one JSON line: { peakKb, peakProcesses, samples, maxProcesses, breakdown }, where
// breakdown lists each process's RSS at the peak sample.
//
// Caveat: a sum of RSS counts pages shared between processes (the node binary's text, shared
// libraries) once per process, so it overstates what the tree costs the machine; it is the
// figure `ps`/`top` users add up, and it is the same rule for every harness.
import { readdirSync, readFileSync } from "node:fs";
import { createInterface } from "node:readline";

const INTERVAL_MS = Number(process.env["RSS_SAMPLE_MS"] ?? 10);
const RESCAN_EVERY = 5;

function statusRssKb(pid: number): number | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, "latin1");
  } catch {
    return undefined;
  }
  if (/^State:\s+Z/m.test(text)) return undefined;
  const m = /^VmRSS:\s+(\d+) kB/m.exec(text);
  return m ? Number(m[1]) : 0;
}

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    // The command name is in parentheses and may itself contain spaces or parentheses.
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(rest[1]);
  } catch {
    return undefined;
  }
}

/** A short label for a process: "agent", "plugin <name>", or its program name. */
function label(pid: number): string {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, "latin1").split("\0").filter(Boolean);
    const joined = argv.join(" ");
    // Sources or prebuilt bundles (dist/bundles/providers/<name>/src/main.mjs).
    const plugin = /providers\/([^/]+)\/src\/main\.m?[tj]s|fixtures\/([^/]+)\/src\/main\.m?[tj]s/.exec(
      joined,
    );
    if (plugin) return `plugin ${plugin[1] ?? plugin[2]}`;
    if (/bin\/agent\.m?[tj]s/.test(joined)) return "agent";
    const prog = (argv[0] ?? "?").split("/").pop()!;
    const script = argv.slice(1).find((a) => !a.startsWith("-"));
    return script && /^(node|sh|bash)$/.test(prog) ? `${prog} ${script.split("/").pop()}` : prog;
  } catch {
    return "?";
  }
}

let root = 0;
const tree = new Set<number>();
const labels = new Map<number, string>();
let peakBreakdown: [number, number][] = [];
const alive = new Set<number>();
let peakKb = 0;
let peakProcesses = 0;
let maxProcesses = 0;
let samples = 0;
let ticks = 0;
let timer: NodeJS.Timeout | undefined;

function rescan(): void {
  // A child's command line is its parent's until it execs, so labels are refreshed each scan.
  // An exiting process (a zombie) has an empty command line: keep the label it had.
  for (const pid of alive) {
    const l = label(pid);
    if (l !== "?") labels.set(pid, l);
  }
  let grew = true;
  const entries = readdirSync("/proc").filter((n) => n.charCodeAt(0) >= 48 && n.charCodeAt(0) <= 57);
  const parents = new Map<number, number>();
  for (const name of entries) {
    const pid = Number(name);
    if (tree.has(pid)) continue;
    const ppid = parentOf(pid);
    if (ppid !== undefined) parents.set(pid, ppid);
  }
  while (grew) {
    grew = false;
    for (const [pid, ppid] of parents) {
      if (tree.has(ppid)) {
        tree.add(pid);
        labels.set(pid, label(pid));
        alive.add(pid);
        parents.delete(pid);
        grew = true;
      }
    }
  }
}

function finish(): void {
  if (timer) clearInterval(timer);
  const breakdown = peakBreakdown
    .sort((a, b) => b[1] - a[1])
    .map(([pid, kb]) => ({ process: labels.get(pid) ?? String(pid), kb }));
  process.stdout.write(`${JSON.stringify({ peakKb, peakProcesses, samples, maxProcesses, breakdown })}\n`);
  process.exit(0);
}

function tick(): void {
  if (ticks++ % RESCAN_EVERY === 0) rescan();
  let sum = 0;
  let count = 0;
  const now: [number, number][] = [];
  for (const pid of alive) {
    const kb = statusRssKb(pid);
    if (kb === undefined) {
      alive.delete(pid);
      continue;
    }
    sum += kb;
    count++;
    now.push([pid, kb]);
  }
  samples++;
  if (sum > peakKb) {
    peakKb = sum;
    peakProcesses = count;
    peakBreakdown = now;
  }
  if (count > maxProcesses) maxProcesses = count;
  if (!alive.has(root) && alive.size === 0) finish();
}

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const text = line.trim();
  if (text === "stop") {
    tick();
    finish();
  }
  const pid = Number(text);
  if (!Number.isInteger(pid) || pid <= 0 || root !== 0) return;
  root = pid;
  tree.add(pid);
  labels.set(pid, label(pid));
  alive.add(pid);
  tick();
  timer = setInterval(tick, INTERVAL_MS);
});
lines.on("close", () => {
  if (root === 0) process.exit(0);
});
process.stdout.write("ready\n");
