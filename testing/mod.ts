/**
 * Test doubles for hosts and storage backends: a fault-injecting storage for crash-point
 * tests, a fault script between a sync client and its server (`SyncFaults`), a scripted
 * provider and a scripted summarizer. They import no test runner and
 * work under any of them (or none). The storage port's conformance suite, which
 * registers vitest tests, is the separate entry point `sessionfold/testing/conformance`.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * import { FaultyStorage } from "sessionfold/testing";
 *
 * const storage = new FaultyStorage(new MemoryStorage(), { crashAt: 3, tornBytes: 5 });
 * ```
 * @module
 */
export {
  type CrashInfo,
  type CrashPoint,
  enumerateCrashPoints,
  FaultyStorage,
  type FaultyStorageOptions,
  type MutatingOperation,
  type MutatingOperationName,
  SimulatedCrashError,
} from "./faulty-storage.ts";
export * from "./scripted-provider.ts";
export { HeldRequest, type SyncFault, type SyncFaultKind, type SyncFaultRecord, type SyncFaultRoute, SyncFaults } from "./sync-faults.ts";
export * from "./scripted-summarizer.ts";
