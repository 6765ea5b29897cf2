/**
 * Sync between stores (`sessionfold/sync`, docs/SYNC.md): a session moves between a tab, a
 * server and another device, and nothing is ever lost. {@linkcode syncStores} brings a local
 * store and a remote to the same state; the remote is another store reached directly
 * ({@linkcode directRemote}) or a sync server over HTTP ({@linkcode httpRemote}), which is
 * {@linkcode createSyncHandler}: a web-standard fetch handler over any store, with an
 * `authorize` hook per request.
 *
 * @example
 * ```ts
 * import { MemoryStorage, Sessions } from "sessionfold";
 *
 * const server = new MemoryStorage();
 * const handler = createSyncHandler({ storage: server, authorize: () => ({ user: "alice", may: () => true }) });
 * const laptop = new Sessions({ storage: new MemoryStorage() });
 * const s = await laptop.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
 * await s.append({ role: "user", parts: [{ type: "text", text: "hello" }] });
 * const report = await syncStores({ local: laptop, remote: directRemote(server, { id: "server" }) });
 * report.pushed; // 1
 * ```
 * @module
 */
export {
  type BackgroundSync,
  type BackgroundSyncEvents,
  backoffDelay,
  startSyncScheduler,
  type SyncBackoff,
  type SyncSchedulerOptions,
  type SyncStatus,
  type SyncTimers,
} from "./background.ts";
export { pendingMessages } from "./pending.ts";
export { syncStores } from "./engine.ts";
export type { SyncStoresOptions } from "./sync-run.ts";
export type { SyncConflict, SyncFork, SyncRemovals, SyncReport } from "./report.ts";
export { createSyncHandler, DEFAULT_MAX_BODY_BYTES, type SyncHandlerOptions } from "./handler.ts";
export type { HiddenFailureHook } from "./hidden-failure.ts";
export {
  type AppendMutation,
  type CreateMutation,
  type ErrorResponse,
  type Mutation,
  type MutationResult,
  parseSyncRequest,
  type PullRequest,
  type PullResponse,
  type PushRequest,
  type PushResponse,
  type ReadRequest,
  type ReadResponse,
  type RefusedSession,
  type RemoveMutation,
  type SealedAppendMutation,
  type SealedCreateMutation,
  type SealedDocuments,
  type SealedRecord,
  type SealedSetMetaMutation,
  type SegmentFile,
  type SegmentNames,
  type SegmentPosition,
  type SegmentRequest,
  type SegmentResponse,
  type SessionHead,
  type SessionLabels,
  type SetMetaMutation,
  SYNC_PROTOCOL_VERSION,
  SYNC_ROUTES,
  type SyncRequests,
  type SyncRoute,
  type Tombstone,
} from "./protocol.ts";
export { directRemote, type DirectRemoteOptions, httpRemote, type HttpRemoteOptions, type SyncRemote } from "./remote.ts";
export { type PushOutcome, STORE_OWNER, type SyncPrincipal, SyncServer, type SyncServerOptions } from "./server.ts";
export { type SyncRefusal, SyncRefusedError } from "../errors.ts";
