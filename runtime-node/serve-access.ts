/**
 * Who may reach a sync server that Node serves (`sessionfold serve`, the playground's local
 * sync server): without a token only a loopback address is served, with one every request
 * must carry it as `Authorization: Bearer <token>`.
 *
 * @module
 */
import { timingSafeEqual } from "node:crypto";

/** Whether `host` is a loopback address (127.0.0.0/8, `::1`, `localhost`): only this machine reaches it. */
export function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** Whether an `Authorization` header is `Bearer <token>`, compared in constant time. */
export function bearerMatches(header: string | null, token: string): boolean {
  const given = Buffer.from(header ?? "");
  const expected = Buffer.from(`Bearer ${token}`);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
