/**
 * What the runtimes, the CLI and the tests need from the core beyond its public surface:
 * the session's internal state and writer, the extension fields the core writes for
 * itself, repair planning, the run loop and the worker boundary's error transfer. It is
 * not in the package's `exports`: nothing here is a promise to users, and changing it
 * never changes the API report.
 *
 * @example
 * ```ts
 * // Its own names, as the runtimes import them (this module is not an export of the package):
 * console.log(BATCH_FIELD);
 * ```
 * @module
 */
// Compaction policies, their trigger and token estimates.
export {
  accumulateCompaction,
  assertContextWindow,
  BYTES_PER_TOKEN,
  type CompactionDecision,
  type CompactionFacts,
  type CompactionPlan,
  type CompactionStep,
  compactionTrigger,
  FILE_DATA_TOKENS,
  type FoldedInput,
  foldModelInput,
  foldNote,
  MAX_FOLD_DEPTH,
  MESSAGE_OVERHEAD_TOKENS,
  nextFold,
  planCompaction,
  TOOL_OVERHEAD_TOKENS,
  validateAfterCompaction,
} from "./compaction/mod.ts";
// Composing the model input: instruction + cumulative summary + Active.
export { type ClosedToolCall, sameIdentity } from "./composer/mod.ts";
// Keys derived from a passphrase (the browser keyring, sealed exports).
export { derivePassphraseKey, PBKDF2_ITERATIONS } from "./encryption/passphrase.ts";
// The typed errors every operation throws, each with a stable `code`.
export { asSessionfoldError } from "./errors.ts";
// Foreign formats: the line detection reads, and the strict UTF-8 decoding every reader uses.
export { firstLine } from "./formats/detect.ts";
export { decodeUtf8Strict } from "./formats/json-text.ts";
// The JSONL codec and its recovery diagnostics.
export { type DecodedRecord, type LastRecord } from "./jsonl/mod.ts";
export { LAST_RECORD_WINDOW } from "./jsonl/tail.ts";
// Records and documents of docs/FORMAT.md, as zod schemas with their types.
// The check of a caller's arguments at the public API (docs/decisions.md "The public API checks its arguments").
export { assertFields, assertKnownFields, type KnownFields, knownOptions, objectArgument, wrongArgument } from "./schema/arguments.ts";
export {
  cumulativeSummary,
  decodeUtf8,
  describeIssues,
  describeJsonError,
  escapedExcerpt,
  EXCERPT_CHARS,
  isBlankDocument,
  jsonSyntaxErrorAt,
  metaRevisionOf,
  nowTimestamp,
  RESET_FIELD,
  STRICT_JSON,
} from "./schema/mod.ts";
// Sessions: the registry, the session handle, runs.
export {
  ANONYMOUS_WRITER,
  applyRepair,
  assertSessionOptions,
  BATCH_FIELD,
  describeLockOwner,
  DraftFlusher,
  type DraftFlushOptions,
  generateSystem,
  hasRepairs,
  isBlocked,
  isDeadOwner,
  LAST_COMPACTED_FIELD,
  lastSequence,
  type LockedOperation,
  type MovedLine,
  NEWEST_SEGMENT_FIELD,
  newId,
  PENDING_FIELD,
  type PendingRepairs,
  planRepair,
  readLockOwner,
  reclaimDeadLock,
  type RepairMove,
  type RepairPlan,
  type RepairRefusal,
  type RepairWrites,
  resolveSessionOptions,
  runLoop,
  type SessionContext,
  type SessionState,
  stoppedDraftMessages,
  toMessageRecord,
  withoutBatchMark,
} from "./session/mod.ts";
// A session's state as an open reads it, and its closed segments, without a handle; the
// newest segment's tail the open reads (IndexedDB sizes a file's last chunk record to it).
export { FOOTER_PREFETCH_BYTES, readSessionState } from "./session/load.ts";
export { segmentRanges } from "./session/read-view.ts";
// The storage port every backend implements, and the in-memory backend.
export { carriesLockId, concatBytes, isWithin, MAX_LOCK_BYTES, messageOf, parentPath, sameBytes, type StorageFailure, storageFailure } from "./storage/mod.ts";
export { readMany, withPrefetchedTail } from "./storage/read-many.ts";
export { encodeMetaDocument } from "./storage/catalog.ts";
export { lockDiagnostics, readSegmentFooter, segmentFooterInTail, unsafeEntry, unsupportedSchema } from "./verify/mod.ts";
export { type ComlinkLike, ERROR_TRANSFER_HANDLER, ownsBuffer, registerErrorTransfer, type TransferHandlerLike, withTransfer } from "./worker/transfer.ts";
// The storage hop both runtimes use: the worker's API and the host's client.
export { type StorageWorkerApi, storageWorkerApi } from "./worker/storage-api.ts";
export { catalogListingText, type CatalogText, catalogTextOfSnapshot, type CatalogTextStore } from "./worker/catalog-text.ts";
export { catalogSnapshotEntries, catalogSnapshotText, damagedSnapshotError } from "./storage/catalog-snapshot.ts";
export { type WorkerLink, WorkerStorageClient } from "./worker/client.ts";
export { type ComlinkAnswer, comlinkAnswerValue, type ComlinkCall, comlinkCall, isComlinkAnswer, type MessageEndpoint } from "./worker/comlink-wire.ts";
export { serveComlinkCalls } from "./worker/comlink-serve.ts";
// The fields the sync scheduler's options may have, for the browser's background sync that passes them on.
export { SYNC_SCHEDULER_FIELDS } from "./sync/background.ts";
// What an exclusive section of the scheduler gives, for the browser's, which waits for the sync's turn inside one.
export type { Ran } from "./sync/scheduler-turns.ts";
// An origin the sync handler answers CORS for, as `sessionfold serve --cors-origin` checks it; the Node listener's own
// answers (a stalled body's 408) carry the same headers.
export { corsHeaders, corsOrigin, corsOrigins } from "./sync/cors.ts";
// A served request's unexpected failure, hidden from its client and reported to the host (the chat route's too).
export { type HiddenFailureHook, hideFailure } from "./sync/hidden-failure.ts";
