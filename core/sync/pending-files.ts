/**
 * Where a sync state keeps its large pending mutations (docs/SYNC.md "The engine"): those a
 * save adds, together in one file of their own under `sync/pending/<remote>/`, written before
 * the first state that names them and removed once a saved state names none of them. The state
 * is saved after every acknowledged batch; with the mutations in it, each save wrote all of the
 * outbox again, so a first sync of a long history wrote its segments over and over (a 36 MB
 * session, 188 MB).
 *
 * @module
 */
import { InvalidInputError } from "../errors.ts";
import { encodeJsonDocument } from "../schema/records.ts";
import { newId } from "../session/ids.ts";
import type { StoragePort } from "../storage/port.ts";
import type { Mutation } from "./protocol.ts";
import { byteEstimate } from "./request-sizes.ts";
import { syncPendingFolder, type SyncState } from "./sync-state.ts";

/** A pending mutation at least this large (its estimate, `byteEstimate`) is kept in a file beside the state. */
const PENDING_FILE_BYTES = 64 * 1024;

/** A pending mutation as the state names it when it is kept apart: its number, its session and op, and where it is. */
interface PendingStub {
  readonly number: number;
  readonly ref: string;
  readonly op: Mutation["op"];
  /** The file under the remote's folder of pending mutations that holds it (without its number), and its place in that file's list. */
  readonly file: string;
  readonly index: number;
}

/** Where a mutation kept apart is: its file and its place in the file's list. */
interface Place {
  readonly file: string;
  readonly index: number;
}

const decoder = new TextDecoder();

/**
 * The pending mutations of one remote's sync state kept apart: {@linkcode PendingFiles.load}
 * reads a stored state back whole, {@linkcode PendingFiles.save} writes the mutations not yet
 * kept (those of one save in one file), then the state, then removes the files no state names.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 *
 * const storage = new MemoryStorage();
 * const files = new PendingFiles(storage, "server");
 * await files.save("sync/remotes/server.json", { client_id: "client_1", next_number: 1, pending: [], sessions: {} });
 * ```
 */
export class PendingFiles {
  readonly #storage: StoragePort;
  readonly #dir: string;
  /** Each mutation this run saved or loaded: where it is kept, or `null` when the state holds it. */
  readonly #placeOf = new WeakMap<Mutation, Place | null>();
  /** The files the last state saved or loaded names. */
  #named = new Set<string>();
  /** Whether this run has removed the files no state names (left by a save that ended before its state). */
  #swept = false;

  constructor(storage: StoragePort, remoteId: string) {
    this.#storage = storage;
    this.#dir = syncPendingFolder(remoteId);
  }

  /**
   * The state `stored` (as read from `statePath`, or a new one where none is) with each mutation
   * kept apart read back.
   *
   * @throws {InvalidInputError} when a file the state names is missing or does not hold the mutation there.
   */
  async load(statePath: string, stored: SyncState): Promise<SyncState> {
    const lists = new Map<string, unknown>();
    const pending: Mutation[] = [];
    for (const entry of stored.pending as (Mutation | PendingStub)[]) {
      if (!("file" in entry) || typeof entry.file !== "string") {
        pending.push(entry as Mutation);
        continue;
      }
      const path = `${this.#dir}/${entry.file}`;
      if (!lists.has(entry.file)) {
        const bytes = await this.#storage.read(path);
        lists.set(entry.file, bytes && JSON.parse(decoder.decode(bytes)));
      }
      const list = lists.get(entry.file);
      const body: unknown = Array.isArray(list) ? list[entry.index] : undefined;
      if (typeof body !== "object" || body === null || (body as Mutation).ref !== entry.ref || (body as Mutation).op !== entry.op) {
        const found = list === undefined ? "is missing" : `holds no ${entry.op} of ${entry.ref} at ${entry.index}`;
        throw new InvalidInputError(`${statePath}: pending mutation ${entry.number} (${entry.op} of ${entry.ref}) is kept in ${path}, which ${found}`, {
          file: path,
          number: entry.number,
        });
      }
      const mutation = { ...body, number: entry.number } as Mutation;
      this.#placeOf.set(mutation, { file: entry.file, index: entry.index });
      this.#named.add(entry.file);
      pending.push(mutation);
    }
    return { ...stored, pending };
  }

  /**
   * Saves `state` at `statePath`: first the large pending mutations not kept yet, in one new file,
   * then the state naming them. The run's first save that writes a file first removes the files no
   * state names (a save that ended before its state left them), so a small sync lists nothing.
   */
  async save(statePath: string, state: SyncState): Promise<void> {
    // A new name each time: a file a saved state names is never written over (a renumbered copy is kept again).
    const file = `${newId("m")}.json`;
    const added: Mutation[] = [];
    for (const mutation of state.pending) {
      if (this.#placeOf.has(mutation)) continue;
      if (byteEstimate(mutation) < PENDING_FILE_BYTES) this.#placeOf.set(mutation, null);
      else added.push(mutation);
    }
    if (added.length > 0) {
      if (!this.#swept) {
        for (const old of await this.#storage.list(this.#dir)) if (!this.#named.has(old)) await this.#storage.remove(`${this.#dir}/${old}`);
        this.#swept = true;
      }
      await this.#storage.replace(`${this.#dir}/${file}`, encodeJsonDocument(added.map(({ number: _number, ...body }) => body)));
      // Only once the file is written: a save that failed leaves no mutation naming a file that is not there.
      added.forEach((mutation, index) => this.#placeOf.set(mutation, { file, index }));
    }
    const named = new Set<string>();
    const pending = state.pending.map((mutation): Mutation | PendingStub => {
      const place = this.#placeOf.get(mutation);
      if (!place) return mutation;
      named.add(place.file);
      return { number: mutation.number, ref: mutation.ref, op: mutation.op, ...place };
    });
    await this.#storage.replace(statePath, encodeJsonDocument({ ...state, pending }));
    for (const old of this.#named) if (!named.has(old)) await this.#storage.remove(`${this.#dir}/${old}`);
    this.#named = named;
  }
}
