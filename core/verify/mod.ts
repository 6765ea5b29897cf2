/**
 * Verification: every file of a session read in full and checked against docs/FORMAT.md,
 * changing nothing. A normal open reads only what the model context needs; this is where
 * corruption in older segments, overlaps and leftover locks are found.
 *
 * @example
 * ```ts
 * import { MemoryStorage, Sessions, verifySession } from "sessionfold";
 * const sessions = new Sessions({ storage: new MemoryStorage() });
 * const ref = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
 * await sessions.create({ ...ref, title: "Demo" });
 * const report = await verifySession(sessions, ref);
 * console.log(report.ok, report.diagnostics.length);
 * ```
 * @module
 */
export { readSegmentFooter, segmentFooterInTail } from "../session/segment-rules.ts";
export { staleCatalogEntries, type StaleCatalogEntry } from "./catalog-check.ts";
export type { OnRefusedEntry } from "../storage/store-walk.ts";
export {
  listStoredSessions,
  lockDiagnostics,
  type StoredSession,
  unsafeEntry,
  unsupportedSchema,
  type VerifyDiagnostic,
  type VerifyReport,
  verifySession,
} from "./verify.ts";
