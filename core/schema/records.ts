/**
 * The schema layer as the session's modules use it, without zod: parsing and encoding the
 * documents, the hand-written record checks, the writers' clock and the footer's summary,
 * and the records' types. A module that imports from here (not from `mod.ts`, whose
 * `export *` reaches the zod schemas) keeps zod out of what a bundle loads for it: `show`
 * and an open read through these alone (docs/decisions.md "zod off the read path").
 *
 * @module
 */
export { draftCheck, lockCheck, messageCheck, metaCheck, metaFieldValid, type RecordCheck, summaryCheck } from "./fast-check.ts";
export { cumulativeSummary, RESET_FIELD } from "./footer.ts";
export { nowTimestamp } from "./now.ts";
export {
  decodeUtf8,
  describeIssues,
  encodeJsonDocument,
  isBlankDocument,
  metaOfDocument,
  metaRevisionOf,
  parseDraftJson,
  parseLockJson,
  parseMetaJson,
} from "./parse.ts";
export type { DraftRecord, MessagePart, MessageRecord, ProviderIdentity, ToolPart, Usage } from "./message.ts";
export type { SessionMeta, WriterLockRecord } from "./meta.ts";
export type { SummaryRecord } from "./summary.ts";
