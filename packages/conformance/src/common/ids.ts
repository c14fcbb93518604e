// Identifiers for the requests the checks make: turn ids are ULIDs, as the kernel's are.
import { randomBytes } from "node:crypto";

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

export function ulid(now = Date.now()): string {
  let time = "";
  for (let t = now, i = 0; i < 10; i++, t = Math.floor(t / 32)) time = CROCKFORD[t % 32] + time;
  return time + [...randomBytes(16)].map((b) => CROCKFORD[b % 32]).join("");
}

export const CONFORMANCE_SESSION = "conformance-session";
