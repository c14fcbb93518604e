// @pluggableharness/fake-forge — a loopback git forge for tests. See README.md.
export {
  checksumFile,
  DEFAULT_PLATFORMS,
  goreleaserAssets,
  type ReleaseFile,
  tarGz,
} from "./release.ts";
export {
  type FakeForge,
  type FakeForgeOptions,
  type PublishOptions,
  type RecordedRequest,
  startFakeForge,
} from "./server.ts";
