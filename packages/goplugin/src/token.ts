// Bearer tokens on gRPC calls: a random secret the server makes, handed to its rightful
// clients out of band (a 0600 file, a plugin's start-up environment, a worker's port), and
// required on every call (`authorization: Bearer <token>`, compared in constant time). The
// server refuses a call without it with UNAUTHENTICATED before its handler sees anything.
import { randomBytes, timingSafeEqual } from "node:crypto";
import {
  InterceptingCall,
  type Interceptor,
  Metadata,
  ServerInterceptingCall,
  type ServerInterceptor,
  status,
} from "@grpc/grpc-js";

/** 256 random bits, URL-safe. */
export function newToken(): string {
  return randomBytes(32).toString("base64url");
}

export function tokenMatches(given: string, token: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return token !== "" && a.length === b.length && timingSafeEqual(a, b);
}

/** The bearer token a call carries, or "". */
export function bearerOf(metadata: Metadata): string {
  const header = metadata.get("authorization")[0];
  return typeof header === "string" && header.startsWith("Bearer ") ? header.slice(7) : "";
}

/** A server interceptor that lets through only calls carrying `token`. */
export function requireToken(token: string, refusal = "a valid token is required"): ServerInterceptor {
  return (_method, call) =>
    new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, pass) => {
            if (tokenMatches(bearerOf(metadata), token)) pass(metadata);
            else
              call.sendStatus({ code: status.UNAUTHENTICATED, details: refusal, metadata: new Metadata() });
          },
        }),
    });
}

/** A client interceptor that puts `token` on every call. */
export function sendToken(token: string): Interceptor {
  return (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        metadata.set("authorization", `Bearer ${token}`);
        next(metadata, listener);
      },
    });
}
