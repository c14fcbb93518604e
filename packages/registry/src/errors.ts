// Typed failures of forge resolution. Every message names what failed and what to do;
// none ever carries a token (requests are described by URL, and URLs never hold one).
import { CodedError } from "@pluggableharness/protocol/coded-error";

export type RegistryErrorCode =
  /** The repository, release or asset does not exist (or is private and no token was sent). */
  | "not_found"
  /** The forge refused the credentials (401/403). */
  | "unauthorized"
  /** The forge's rate limit is spent. */
  | "rate_limited"
  /** The forge or mirror could not be reached. */
  | "network"
  /** Any other unexpected HTTP answer, or a body that is not what the API documents. */
  | "bad_response"
  /** No release satisfies the version constraint. */
  | "no_matching_version"
  /** The release publishes nothing for this platform. */
  | "no_asset"
  /** The release has no checksum file, or it does not list the asset. */
  | "no_checksum"
  /** A downloaded or installed file does not match its checksum. */
  | "checksum_mismatch"
  /** The lock file pins something this install cannot honour. */
  | "lock_mismatch"
  /** The archive is malformed, unsafe (paths escaping, links, devices) or holds no executable. */
  | "bad_archive"
  /** A download exceeded its size limit. */
  | "too_large";

export class RegistryError extends CodedError<RegistryErrorCode> {
  override readonly name = "RegistryError";
}
