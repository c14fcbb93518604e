// The global, per-user config `$XDG_CONFIG_HOME/agent/config.hcl`: `dev_overrides`,
// `registry_mirror`, and `defaults` (the profile and model a run uses unless the
// command line or the project says otherwise). Mirror credentials follow the same
// secrets rule as provider blocks and are held as Secret objects, so the loaded
// object can be printed or serialised without exposing them. Loading logs only
// the file path, at debug level.

import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { parseFile, type Range } from "@pluggableharness/hcl";
import { type Diags, decodeBody, readString } from "./decode.ts";
import { type ConfigDiagnostic, errorAt, fromHcl, hasErrors } from "./diagnostics.ts";
import { readConfigFile } from "./read-file.ts";
import { type Environment, envShape, resolveEnv, Secret, scrub } from "./secrets.ts";

/** Where the loader reports what it does: only file paths, at debug level. */
export interface ConfigLogger {
  debug(message: string, fields?: Record<string, string>): void;
}

export interface DevOverride {
  /** Absolute path of the plugin executable (relative paths are taken from the config file's directory). */
  path: string;
  range: Range;
}

export interface RegistryMirror {
  prefix: string;
  url: string;
  auth?: Secret;
  range: Range;
}

/** `defaults { profile = "…"  model = "provider/id" }` of the global config. */
export interface UserDefaults {
  profile?: string;
  model?: { provider: string; id: string; text: string; range: Range };
}

export interface GlobalConfig {
  /** The file read, when there was one. */
  file?: string;
  defaults?: UserDefaults;
  devOverrides: Record<string, DevOverride>;
  registryMirror?: { default?: string; mirrors: RegistryMirror[] };
}

export type GlobalLoadResult =
  | { ok: true; config: GlobalConfig }
  | { ok: false; diagnostics: ConfigDiagnostic[] };

export function globalConfigPath(env: Environment = process.env): string {
  const xdg = env.XDG_CONFIG_HOME;
  const base =
    xdg !== undefined && xdg !== "" && isAbsolute(xdg) ? xdg : join(env.HOME ?? homedir(), ".config");
  return join(base, "agent", "config.hcl");
}

export interface GlobalLoadOptions {
  env?: Environment;
  logger?: ConfigLogger;
  /** Overrides the XDG location (tests). */
  path?: string;
}

export function loadGlobalConfig(options: GlobalLoadOptions = {}): GlobalLoadResult {
  const env = options.env ?? process.env;
  const file = options.path ?? globalConfigPath(env);
  if (!existsSync(file)) return { ok: true, config: { devOverrides: {} } };
  options.logger?.debug("loading global configuration", { file });
  const read = readConfigFile(file, "Cannot read the global configuration");
  if (!read.ok) return { ok: false, diagnostics: read.diagnostics };
  return parseGlobalConfig(read.bytes, file, env);
}

export function parseGlobalConfig(
  source: string | Uint8Array,
  file: string,
  env: Environment,
): GlobalLoadResult {
  const parsed = parseFile(source, file);
  const diags: Diags = parsed.diagnostics.map((d) => fromHcl(d, "parse"));
  const top = decodeBody(
    parsed.file.body,
    {
      blocks: {
        dev_overrides: { single: true },
        registry_mirror: { single: true },
        defaults: { single: true },
      },
    },
    parsed.file.range,
    "the global config",
    diags,
  );
  for (const d of diags) {
    if (d.category === "unknown_block" || d.category === "unknown_attribute") {
      d.detail +=
        " The global config holds only dev_overrides, registry_mirror and defaults; provider configuration and credentials belong in agent.hcl.";
    }
  }
  const config: GlobalConfig = { file, devOverrides: {} };
  const resolvedSecrets: string[] = [];

  const dev = top.blocks.find((b) => b.type === "dev_overrides");
  if (dev) {
    for (const item of dev.body.items) {
      if (item.kind !== "Attribute") {
        diags.push(
          errorAt(
            "unknown_block",
            "Unexpected block",
            'dev_overrides holds only name = "path" entries.',
            item.typeRange,
          ),
        );
        continue;
      }
      const path = readString(item, `dev_overrides.${item.name}`, diags);
      if (path === undefined) continue;
      if (path === "") {
        diags.push(
          errorAt(
            "invalid_value",
            "Empty path",
            `dev_overrides.${item.name} cannot be empty.`,
            item.expr.range,
          ),
        );
        continue;
      }
      config.devOverrides[item.name] = { path: resolve(dirname(file), path), range: item.nameRange };
    }
  }

  const mirrorBlock = top.blocks.find((b) => b.type === "registry_mirror");
  if (mirrorBlock) {
    const body = decodeBody(
      mirrorBlock.body,
      { attributes: ["default"], blocks: { mirror: {} } },
      mirrorBlock.typeRange,
      "registry_mirror",
      diags,
    );
    const mirrors: RegistryMirror[] = [];
    const def = body.attrs.get("default");
    const defaultUrl = def && readString(def, "registry_mirror.default", diags);
    for (const m of body.blocks) {
      const mb = decodeBody(
        m.body,
        { attributes: ["prefix", "url", "auth"], required: ["prefix", "url"] },
        m.typeRange,
        "registry_mirror.mirror",
        diags,
      );
      const prefix = mb.attrs.get("prefix") && readString(mb.attrs.get("prefix")!, "mirror.prefix", diags);
      const url = mb.attrs.get("url") && readString(mb.attrs.get("url")!, "mirror.url", diags);
      const authAttr = mb.attrs.get("auth");
      let auth: Secret | undefined;
      if (authAttr) {
        const shape = envShape(authAttr.expr, "mirror.auth");
        if ("diagnostic" in shape) diags.push(shape.diagnostic);
        else {
          const got = resolveEnv(shape.name, env, authAttr.expr);
          if ("diagnostic" in got) diags.push(got.diagnostic);
          else {
            resolvedSecrets.push(got.value);
            auth = new Secret(got.value, shape.name);
          }
        }
      }
      if (prefix !== undefined && mirrors.some((x) => x.prefix === prefix)) {
        diags.push(
          errorAt(
            "duplicate",
            "Duplicate mirror prefix",
            `Another mirror already covers "${prefix}".`,
            m.typeRange,
          ),
        );
        continue;
      }
      if (prefix !== undefined && url !== undefined) {
        const mirror: RegistryMirror = { prefix, url, range: m.typeRange };
        if (auth !== undefined) mirror.auth = auth;
        mirrors.push(mirror);
      }
    }
    config.registryMirror = { mirrors };
    if (defaultUrl !== undefined) config.registryMirror.default = defaultUrl;
  }

  const defaultsBlock = top.blocks.find((b) => b.type === "defaults");
  if (defaultsBlock) {
    const body = decodeBody(
      defaultsBlock.body,
      { attributes: ["profile", "model"] },
      defaultsBlock.typeRange,
      "defaults",
      diags,
    );
    const defaults: UserDefaults = {};
    const profileAttr = body.attrs.get("profile");
    const profile = profileAttr && readString(profileAttr, "defaults.profile", diags);
    if (profile !== undefined) defaults.profile = profile;
    const modelAttr = body.attrs.get("model");
    const model = modelAttr && readString(modelAttr, "defaults.model", diags);
    if (model !== undefined && modelAttr) {
      const slash = model.indexOf("/");
      if (slash <= 0 || slash === model.length - 1) {
        diags.push(
          errorAt(
            "invalid_value",
            "Invalid model",
            `defaults.model is "<provider>/<model id>" (e.g. "anthropic/claude-sonnet-5"), not "${model}".`,
            modelAttr.expr.range,
          ),
        );
      } else {
        defaults.model = {
          provider: model.slice(0, slash),
          id: model.slice(slash + 1),
          text: model,
          range: modelAttr.expr.range,
        };
      }
    }
    config.defaults = defaults;
  }

  if (hasErrors(diags)) return { ok: false, diagnostics: scrub(diags, resolvedSecrets) };
  return { ok: true, config };
}

/**
 * The mirror for a source address: the longest matching prefix (`prefix` says which),
 * else the default URL (no prefix: the whole source address is appended to it).
 */
export function mirrorFor(
  config: GlobalConfig,
  source: string,
): { url: string; auth?: Secret; prefix?: string } | undefined {
  const rm = config.registryMirror;
  if (rm === undefined) return undefined;
  let best: RegistryMirror | undefined;
  for (const m of rm.mirrors) {
    if (source.startsWith(m.prefix) && (best === undefined || m.prefix.length > best.prefix.length)) best = m;
  }
  if (best !== undefined)
    return best.auth === undefined
      ? { url: best.url, prefix: best.prefix }
      : { url: best.url, auth: best.auth, prefix: best.prefix };
  return rm.default === undefined ? undefined : { url: rm.default };
}

/** dev_overrides as the resolver takes them. */
export function devOverridePaths(config: GlobalConfig): Record<string, string> {
  return Object.fromEntries(Object.entries(config.devOverrides).map(([k, v]) => [k, v.path]));
}
