// What a plugin launch authenticates with (docs/security/sockets.md). AutoMTLS: the host's
// certificate, one per kernel process (the pinning that matters is each launch's own plugin
// certificate), shared through a global so the prelauncher in bin/agent.mjs and the kernel
// use the same one. And a per-launch token, for a plugin that does not do AutoMTLS: the
// kernel's callback socket for it then requires that token. Node built-ins only (and
// goplugin's certificate module): prelaunch.ts loads this before the CLI.
import { randomBytes } from "node:crypto";
import { type Certificate, generateCertificate } from "@pluggableharness/goplugin/cert";

const KEY = Symbol.for("pluggableharness.runtime.hostCertificate");

/** This process's AutoMTLS certificate as a plugin host, made on first use. */
export function hostCertificate(): Certificate {
  const g = globalThis as { [KEY]?: Certificate };
  g[KEY] ??= generateCertificate();
  return g[KEY];
}

/** A fresh per-launch token (256 random bits). */
export function launchToken(): string {
  return randomBytes(32).toString("base64url");
}
