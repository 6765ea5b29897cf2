/**
 * Test helpers for sessionfold and for anyone writing a storage backend: the storage
 * port's conformance suite, and a fault-injecting storage for crash-point tests.
 * These modules import `vitest` and are meant for test code only.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * import { runStorageTests } from "sessionfold/testing";
 *
 * runStorageTests("MemoryStorage", () => ({ storage: new MemoryStorage() }));
 * ```
 * @module
 */
export { runStorageTests, type StorageTestTarget } from "./storage-conformance.ts";
export {
  enumerateCrashPoints,
  FaultyStorage,
  SimulatedCrashError,
  type CrashInfo,
  type CrashPoint,
  type FaultyStorageOptions,
  type MutatingOperation,
  type MutatingOperationName,
} from "./faulty-storage.ts";
export * from "./scripted-provider.ts";
export * from "./scripted-summarizer.ts";
