// The environment a plugin starts with: nothing from the kernel's own environment
// except an explicit allowlist, plus go-plugin's handshake variables. Secrets never
// travel this way; they reach a plugin through Configure.
import { ENV, formatProtocolVersions, KERNEL_TOKEN_ENV, type MagicCookie } from "@pluggableharness/goplugin";

/** Variables copied from the kernel's environment unless the caller says otherwise. */
/** (XDG_DATA_HOME: where the memory provider keeps global records; a path, never a secret.) */
export const DEFAULT_ENV_ALLOWLIST: readonly string[] = ["PATH", "HOME", "TMPDIR", "LANG", "XDG_DATA_HOME"];

export interface EnvironmentSpec {
  /** The kernel environment allowlisted names are copied from (default process.env). */
  source?: NodeJS.ProcessEnv;
  /** Replaces DEFAULT_ENV_ALLOWLIST. */
  allowlist?: readonly string[];
  /** Extra names to copy (per-provider additions from configuration). */
  passthrough?: readonly string[];
  /** Extra literal values (non-secret, from configuration). */
  set?: Readonly<Record<string, string>>;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function buildEnvironment(
  spec: EnvironmentSpec,
  handshake: {
    cookie: MagicCookie;
    versions: readonly number[];
    socketDir: string;
    clientCertPem?: string;
    kernelToken?: string;
  },
): Record<string, string> {
  const source = spec.source ?? process.env;
  const reserved = new Set<string>([handshake.cookie.key, KERNEL_TOKEN_ENV, ...Object.values(ENV)]);
  const env: Record<string, string> = {};
  for (const name of [...(spec.allowlist ?? DEFAULT_ENV_ALLOWLIST), ...(spec.passthrough ?? [])]) {
    if (!NAME.test(name)) throw new Error(`invalid environment variable name ${JSON.stringify(name)}`);
    if (reserved.has(name))
      throw new Error(`${name} is set by the plugin runtime and cannot be passed through`);
    const value = source[name];
    if (value !== undefined) env[name] = value;
  }
  for (const [name, value] of Object.entries(spec.set ?? {})) {
    if (!NAME.test(name)) throw new Error(`invalid environment variable name ${JSON.stringify(name)}`);
    if (reserved.has(name)) throw new Error(`${name} is set by the plugin runtime and cannot be overridden`);
    env[name] = value;
  }
  // The Node this host runs on, for plugins that are bundled scripts (`agent plugin
  // build`'s launcher execs it): a path, never a secret. A caller's own value wins.
  env["AGENT_NODE"] ??= process.execPath;
  env[handshake.cookie.key] = handshake.cookie.value;
  env[ENV.protocolVersions] = formatProtocolVersions(handshake.versions);
  env[ENV.unixSocketDir] = handshake.socketDir;
  // Go plugins on Windows listen on TCP in this range; set for parity with Go hosts.
  env[ENV.minPort] = "10000";
  env[ENV.maxPort] = "25000";
  if (handshake.clientCertPem) env[ENV.clientCert] = handshake.clientCertPem;
  if (handshake.kernelToken) env[KERNEL_TOKEN_ENV] = handshake.kernelToken;
  return env;
}
