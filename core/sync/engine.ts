/**
 * The sync engine: brings a local store and a remote ({@linkcode SyncRemote}) to the same
 * state (docs/SYNC.md "The engine"). It pushes what the remote lacks as numbered mutations,
 * kept in the local store's outbox (`sync/remotes/<remote>.json`) before they are sent, so an
 * interrupted sync resends the same numbers and nothing is applied twice; then it pulls what
 * the local store lacks by cursor. A tail the server forked, or a segmentation it did not
 * take, is re-read from the server (the server's copy wins; the local messages are in the
 * session or its fork by then), and every fork is reported.
 *
 * @module
 */
import { InvalidInputError } from "../errors.ts";
import { EncryptedStorage } from "../encryption/encrypted-storage.ts";
import { STORE_MARKER } from "../encryption/places.ts";
import { assertFields, knownOptions } from "../schema/arguments.ts";
import type { StoragePort } from "../storage/port.ts";
import type { SyncReport } from "./report.ts";
import { settleRereads } from "./rereads.ts";
import { SYNC_STORES_FIELDS, SyncRun, type SyncStoresOptions } from "./sync-run.ts";
import { flushOutbox } from "./outbox.ts";
import { enqueueLocalChanges, makeSealedForks } from "./local-changes.ts";
import { pullChanges } from "./pull.ts";
import { underSyncLock } from "./run-lock.ts";

/**
 * Syncs the local store with a remote: push, then pull. Resumable: run it again after any
 * interruption and it finishes the job without applying anything twice.
 *
 * @example
 * ```ts
 * import { MemoryStorage, Sessions } from "sessionfold";
 * import { directRemote } from "sessionfold/sync";
 *
 * const local = new Sessions({ storage: new MemoryStorage() });
 * const report = await syncStores({ local, remote: directRemote(new MemoryStorage(), { id: "backup" }) });
 * console.log(report.pushed, report.pulled, report.forks);
 * ```
 * @throws {SyncRefusedError} when the remote refuses the client (401, 403, another user's client id); nothing was changed by the refused request.
 * @throws {WriterLockedError} when another run of this store is under way, against any remote (its lock,
 * `sync/run.lock`, names it); nothing was read or written.
 * @throws {InvalidInputError} when `options` is not an object with `local` and `remote`, or has a field it does not know;
 * when the remote serves the local store itself, or the local store is encrypted and not given as its `EncryptedStorage`; nothing was written.
 */
export async function syncStores(options: SyncStoresOptions): Promise<SyncReport> {
  assertFields(knownOptions(options, "syncStores(options)", SYNC_STORES_FIELDS), "syncStores(options)", { local: "object!", remote: "object!" });
  options.signal?.throwIfAborted();
  const run = new SyncRun(options);
  // Fail closed: an encrypted store reached through anything but its EncryptedStorage would sync its plaintext view.
  if (!run.codec && (await EncryptedStorage.isEncrypted(run.local.storage))) {
    throw new InvalidInputError(
      `the local store is encrypted (${STORE_MARKER}) but sync was not given its EncryptedStorage: give Sessions over the EncryptedStorage itself, so that its sessions travel sealed`,
      { file: STORE_MARKER },
    );
  }
  if (run.remote.storage !== undefined && (await sameStore(run.remote.storage, run.local.storage))) {
    throw new InvalidInputError(`the remote ${JSON.stringify(run.remote.id)} serves the local store itself: sync needs two stores`, {
      remote: run.remote.id,
    });
  }
  const holder = { identity: run.writer.identity, probe: run.probe, clock: run.clock };
  return await underSyncLock(run.local.storage, run.remote.id, holder, () => pushAndPull(run));
}

/** The run under its lock: the outbox, the local changes and the pull, until neither side lacks anything. */
async function pushAndPull(run: SyncRun): Promise<SyncReport> {
  // A re-read a crash cut is finished or undone first: until then its session may be missing here, which a push would take for a delete.
  for (const { ref, message } of await settleRereads(run.local.storage)) run.conflict({ ref, reason: "reread-blocked", message });
  await run.load();
  // A pull that left local changes the remote lacks (messages a re-read carried over to a
  // fork, segments a create did not bring) pushes them: once more.
  for (let pass = 0; pass < 3; pass++) {
    run.pushAgain = false;
    // A rejected mutation can ask for another (the server lacks earlier messages, a sealed fork to push): a few rounds.
    for (let round = 0; round < 4; round++) {
      run.rejected = false;
      if (!(await flushOutbox(run))) return run.report;
      await makeSealedForks(run);
      // What was enqueued went through: every session is not opened again to find nothing (changes made meanwhile go next time).
      if (round > 0 && !run.rejected) break;
      if (!(await enqueueLocalChanges(run))) break;
    }
    await pullChanges(run);
    if (!run.pushAgain) break;
  }
  return run.report;
}

/**
 * Whether two stores are one: the same handle, or two handles whose backends say they hold
 * the same data (`StoragePort.storeIdentity`: one PostgreSQL schema under two spellings of
 * its URL). A backend that cannot say is taken for another store.
 */
async function sameStore(a: StoragePort, b: StoragePort): Promise<boolean> {
  if (a === b) return true;
  if (!a.storeIdentity || !b.storeIdentity) return false;
  const [ours, theirs] = await Promise.all([a.storeIdentity(), b.storeIdentity()]);
  return ours === theirs;
}
