// Unix socket paths: the sun_path length limit, fresh names, and stale files.
import { randomBytes } from "node:crypto";
import { lstatSync, unlinkSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SocketPathTooLongError } from "./errors.ts";

/**
 * Longest usable socket path in bytes: sun_path holds 108 bytes on Linux and 104 on
 * the BSDs/macOS, one of which is the terminating NUL. Node does not check this and
 * some versions silently truncate, so every path is checked here first.
 */
export function maxSocketPathBytes(platform: NodeJS.Platform = process.platform): number {
  return platform === "linux" ? 107 : 103;
}

export function assertSocketPath(path: string, platform: NodeJS.Platform = process.platform): void {
  const limit = maxSocketPathBytes(platform);
  if (Buffer.byteLength(path) > limit) throw new SocketPathTooLongError(path, limit);
}

/** Characters a random socket name suffix adds (go-plugin uses 9-10 digits). */
export const SOCKET_SUFFIX_LENGTH = 10;

/**
 * A fresh, unguessable socket path `<dir>/<prefix><random>` that fits the platform
 * limit. `dir` defaults to PLUGIN_UNIX_SOCKET_DIR's usual fallback, the OS temp dir.
 */
export function newSocketPath(dir: string = tmpdir(), prefix = "plugin"): string {
  const suffix = randomBytes(8).toString("base64url").replace(/[-_]/g, "x").slice(0, SOCKET_SUFFIX_LENGTH);
  const path = join(dir, `${prefix}${suffix}`);
  assertSocketPath(path);
  return path;
}

/**
 * Makes `path` free for binding. A leftover socket file from a crashed process makes
 * bind fail with EADDRINUSE; it is removed only if nothing accepts connections on it.
 * A live socket or a non-socket file is left alone and reported.
 */
export async function clearStaleSocket(path: string): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch {
    return; // nothing there
  }
  if (!isSocket) throw new Error(`refusing to replace ${path}: it exists and is not a socket`);
  const live = await new Promise<boolean>((resolve) => {
    const s = connect(path);
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
  if (live) throw new Error(`socket ${path} is in use by a running process`);
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}

/** gRPC target for a unix socket path. */
export function unixTarget(path: string): string {
  return `unix:${path}`;
}
