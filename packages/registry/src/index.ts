// @pluggableharness/registry — providers from git forges. See README.md.
export { type ArchiveFile, findExecutable, MAX_UNPACKED, readArchive } from "./archive.ts";
export {
  type AssetFormat,
  type PlatformAsset,
  parseAssetName,
  parseChecksumFile,
  pickAsset,
  pickChecksumFile,
  platformsOf,
} from "./assets.ts";
export {
  type CachedProducer,
  type CacheEntry,
  entryDir,
  executablePath,
  findEntry,
  INSTALL_RECORD,
  type InstallRecord,
  listEntries,
  PRODUCERS_RECORD,
  providerCacheDir,
  readProducers,
  removeEntry,
  sha256,
  storeEntry,
  verifyEntry,
  writeProducers,
} from "./cache.ts";
export { RegistryError, type RegistryErrorCode } from "./errors.ts";
export {
  DEFAULT_GITHUB_API,
  DEFAULT_GITLAB_API,
  type ForgeOptions,
  type Release,
  type ReleaseAsset,
  type ReleaseSource,
  releaseSourceFor,
} from "./forges.ts";
export { type Credential, displayUrl, type Fetch } from "./http.ts";
export {
  type InstallMode,
  type InstallOptions,
  type InstallOutcome,
  installProviders,
  MAX_ASSET_BYTES,
  needsForge,
} from "./install.ts";
