/**
 * The storage port every runtime implements, and {@linkcode MemoryStorage}.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * const storage = new MemoryStorage();
 * await storage.append("log.jsonl", new TextEncoder().encode('{"a":1}\n'));
 * ```
 * @module
 */
export type { CommitPlan, CommitPlanResult, FileTail, LastFileRequest, PlannedWrite, ReadRequest, ReadResult, StoragePort, WriteOptions } from "./port.ts";
export { applyCommitPlanByCalls } from "./commit-plan.ts";
export { carriesLockId, MAX_LOCK_BYTES } from "./fence.ts";
export { hintedFile } from "./read-many.ts";
export {
  CATALOG_FIELDS,
  catalogDocument,
  type CatalogEntry,
  type CatalogListing,
  type CatalogPage,
  cataloguedFolder,
  type CataloguedPath,
  cataloguedPath,
  isListedName,
} from "./catalog.ts";
export { MemoryStorage, type MemoryStorageOptions } from "./memory.ts";
export { assertStoragePath, isWithin, parentPath } from "./path.ts";
export { concatBytes, sameBytes } from "./bytes.ts";
export { messageOf, type StorageFailure, storageFailure } from "./failure.ts";
export { formatBytes, MAX_FILE_BYTES, MAX_JSON_DEPTH, MAX_LINE_BYTES } from "./limits.ts";
