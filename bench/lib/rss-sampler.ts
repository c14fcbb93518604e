// Peak resident memory of a whole process tree, sampled from /proc in its own process so
// that the sampling never stalls the benchmark runner (which also serves the fake vendor).
//
// Protocol: the runner starts this script before it spawns the harness, waits for "ready",
// then writes the harness's pid and a newline on stdin. From then on, every INTERVAL_MS the
// sampler reads VmRSS from /proc/<pid>/status for every process known to be in the tree and
// sums them; every RESCAN_EVERY ticks it scans /proc/*/stat for processes whose parent is in
// the tree (a process stays in the tree after its parent exits, so re-parented grandchildren
// are still counted). When the root and every known descendant have exited, or on "stop",
// it prints one JSON line: { peakKb, peakProcesses, samples, maxProcesses }.
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

let root = 0;
const tree = new Set<number>();
const alive = new Set<number>();
let peakKb = 0;
let peakProcesses = 0;
let maxProcesses = 0;
let samples = 0;
let ticks = 0;
let timer: NodeJS.Timeout | undefined;

function rescan(): void {
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
        alive.add(pid);
        parents.delete(pid);
        grew = true;
      }
    }
  }
}

function finish(): void {
  if (timer) clearInterval(timer);
  process.stdout.write(`${JSON.stringify({ peakKb, peakProcesses, samples, maxProcesses })}\n`);
  process.exit(0);
}

function tick(): void {
  if (ticks++ % RESCAN_EVERY === 0) rescan();
  let sum = 0;
  let count = 0;
  for (const pid of alive) {
    const kb = statusRssKb(pid);
    if (kb === undefined) {
      alive.delete(pid);
      continue;
    }
    sum += kb;
    count++;
  }
  samples++;
  if (sum > peakKb) {
    peakKb = sum;
    peakProcesses = count;
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
  alive.add(pid);
  tick();
  timer = setInterval(tick, INTERVAL_MS);
});
lines.on("close", () => {
  if (root === 0) process.exit(0);
});
process.stdout.write("ready\n");
