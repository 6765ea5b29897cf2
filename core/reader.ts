/**
 * The core as code that opens and reads a store needs it, and nothing else: the storage
 * contract and the helpers a backend uses, ids and paths, `meta.json` and segment footers, a
 * session's state as an open reads it, batched reads, the lock's diagnostics and the encrypted
 * store's decorator. A narrow door beside `core/mod.ts` and `core/internal.ts` (every name here
 * is exported by one of them too): a bundle splits code by which entry reaches a module, so
 * the Node file store and the CLI's `show`, importing this one, do not load the importers of
 * other systems' formats, export with redaction or agent definitions, which `core/mod.ts`
 * reaches (docs/decisions.md "CLI start-up"), nor the session handle's writers, which come
 * with the registry (`core/registry.ts`). Not in the package's `exports`.
 *
 * @example
 * ```ts
 * // The same names as the package's (this module is not an export of its own):
 * import { formatSessionRef } from "sessionfold";
 * formatSessionRef({ agentId: "a1", workspaceId: "w1", sessionId: "s1" }); // "a1/w1/s1"
 * ```
 * @module
 */
export { EncryptedStorage, storageForKeys } from "./encryption/encrypted-storage.ts";
export { type KnownFields, knownOptions, wrongArgument } from "./schema/arguments.ts";
export type { KeyProvider } from "./encryption/keys.ts";
export { LAST_RECORD_WINDOW } from "./jsonl/tail.ts";
export { formatSessionRef, parseSessionRef, type SessionRef } from "./layout/ids.ts";
export { sessionPaths, type SessionPlace } from "./layout/paths.ts";
export type { MessagePart } from "./schema/message.ts";
export type { SessionMeta } from "./schema/meta.ts";
export { parseMetaJson } from "./schema/parse.ts";
export { describeLockOwner } from "./session/lock.ts";
export { readSessionState } from "./session/load.ts";
export type { SessionState } from "./session/state.ts";
export { segmentRanges } from "./session/read-view.ts";
export { readSegmentFooter, segmentFooterInTail } from "./session/segment-rules.ts";
// The storage layer whole: the port every backend implements and the helpers it uses, named
// one by one: esbuild, bundling without code splitting, leaves a module that a dynamic import
// also reaches uninitialised behind an `export *` of a module that none does (the Node file
// store then found its catalog's constants undefined; test/node/crash.test.ts bundles so).
export type { CommitPlan, CommitPlanResult, FileTail, LastFileRequest, PlannedWrite, ReadRequest, ReadResult } from "./storage/port.ts";
export type { StoragePort, WriteOptions } from "./storage/port.ts";
export { applyCommitPlanByCalls } from "./storage/commit-plan.ts";
export { carriesLockId, MAX_LOCK_BYTES } from "./storage/fence.ts";
export { CATALOG_FIELDS, catalogDocument, type CatalogEntry, type CatalogListing, type CatalogPage } from "./storage/catalog.ts";
export { cataloguedFolder, type CataloguedPath, cataloguedPath, isListedName } from "./storage/catalog.ts";
export { assertStoragePath, concatBytes, formatBytes, isWithin, MAX_FILE_BYTES, MAX_JSON_DEPTH, MAX_LINE_BYTES, parentPath } from "./storage/mod.ts";
export { MemoryStorage, type MemoryStorageOptions, messageOf, type StorageFailure, storageFailure } from "./storage/mod.ts";
export { hintedFile, readMany, withPrefetchedTail } from "./storage/read-many.ts";
export { lockDiagnostics, unsafeEntry, unsupportedSchema } from "./verify/verify.ts";
export { staleCatalogEntries } from "./verify/catalog-check.ts";
