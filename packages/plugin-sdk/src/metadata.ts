// Describe() answers built from the plugin's package.json, so a plugin's identity has
// one source: the same name and version it is published under.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { DescService } from "@bufbuild/protobuf";
import { PluginCategory } from "@pluggableharness/protocol/common";

/** The package.json fields this SDK reads. */
export interface PackageMetadata {
  name: string;
  version: string;
  /** Optional PluggableHarness-specific block. */
  pluggableharness?: {
    /** Provider name reported by Describe; defaults to the package name without scope. */
    name?: string;
    /** Source address, e.g. "github.com/acme/provider-foo". */
    source?: string;
    /** Category for services whose own package names none (e.g. hook subscribers). */
    category?: string;
  };
}

export interface Producer {
  name: string;
  version: string;
  source: string;
  category: PluginCategory;
  protocolVersion: number;
}

export function readPackageMetadata(from: URL | string | PackageMetadata): PackageMetadata {
  if (typeof from === "object" && !(from instanceof URL)) return from;
  const path = from instanceof URL || from.startsWith("file:") ? fileURLToPath(from) : from;
  const parsed = JSON.parse(readFileSync(path, "utf8")) as Partial<PackageMetadata>;
  if (typeof parsed.name !== "string" || typeof parsed.version !== "string") {
    throw new Error(`${path}: package.json needs a string "name" and "version"`);
  }
  return parsed as PackageMetadata;
}

/** "model" -> PLUGIN_CATEGORY_MODEL; unknown names (and "kernel") give UNSPECIFIED. */
export function categoryFromName(name: string | undefined): PluginCategory {
  if (!name) return PluginCategory.UNSPECIFIED;
  const key = name.toUpperCase() as keyof typeof PluginCategory;
  const value = PluginCategory[key];
  // KERNEL is the kernel's own attribution; no plugin may claim it.
  return typeof value === "number" && value !== PluginCategory.KERNEL ? value : PluginCategory.UNSPECIFIED;
}

/** The category a service belongs to, from its proto package ("pluggableharness.tool.v1"). */
export function categoryOfService(service: DescService): PluginCategory {
  const m = /^pluggableharness\.([a-z]+)\.v\d+\./.exec(service.typeName);
  return categoryFromName(m?.[1]);
}

export function producerFor(
  meta: PackageMetadata,
  category: PluginCategory,
  protocolVersion: number,
): Producer {
  const bare = meta.name.replace(/^@[^/]+\//, "");
  return {
    name: meta.pluggableharness?.name ?? bare,
    version: meta.version.replace(/^v/, ""),
    source: meta.pluggableharness?.source ?? "",
    category,
    protocolVersion,
  };
}
