/**
 * {@linkcode EncryptedStorage}: a {@linkcode StoragePort} over another one that seals every
 * session file on the way down and opens it on the way up (docs/FORMAT.md "Encrypted
 * stores"). The core above it reads the plaintext view: one plaintext line for each stored
 * line, so the JSONL codec, torn-tail recovery, compaction, fork, repair and export work
 * unchanged. A line that does not open (tampered, moved, reordered, plaintext, or a key that
 * does not fit) is shown to the core as a line that is not JSON, which the recovery rules
 * report as a fatal `invalid_json` diagnostic at its file and line: it is never read as valid.
 *
 * @module
 */
import { CorruptSessionError, InvalidInputError, KeyRequiredError, WrongKeyError } from "../errors.ts";
import { assertFields, assertMethods } from "../schema/arguments.ts";
import { concatBytes } from "../storage/bytes.ts";
import { applyCommitPlanByCalls } from "../storage/commit-plan.ts";
import type { CommitPlan, CommitPlanResult, FileTail, StoragePort, WriteOptions } from "../storage/port.ts";
import { fromBase64, toBase64 } from "./base64.ts";
import {
  type AesGcm,
  type ClearFields,
  clearFieldsOf,
  type Envelope,
  EnvelopeRefusal,
  LINE_CLEAR_FIELDS,
  openEnvelope,
  parseEnvelope,
  sealBytes,
  type SealPlace,
} from "./envelope.ts";
import {
  encodeSessionKeys,
  type KeyProvider,
  newDataKey,
  parseSessionKeys,
  rewrapDataKey,
  type SessionKeysFile,
  type StoredDataKey,
  unwrapDataKey,
} from "./keys.ts";
import { type SealedKind, sealedKindOf, SESSION_KEYS_FILE, sessionFolderOf, STORE_MARKER } from "./places.ts";
import { filesUnder } from "../storage/files-under.ts";

/** A line or document the store refused to open: where, and why. */
export interface SealRefusal {
  /** The storage key of the file. */
  readonly path: string;
  /** 1-based line for a JSONL file read whole; `null` for a document or a line read from the tail. */
  readonly line: number | null;
  readonly reason: string;
}

/** Options of {@linkcode EncryptedStorage.open} and {@linkcode EncryptedStorage.create}. */
export interface EncryptedStorageOptions {
  /** Called for every line or document refused (the core also sees each as a fatal diagnostic). */
  readonly onRefused?: (refusal: SealRefusal) => void;
  /** The clock of `created_at` in `keys.json` (default `Date.now`). */
  readonly clock?: () => number;
  /**
   * The AES-256-GCM every record is sealed and opened with: WebCrypto's by default; the Node
   * runtime gives `node:crypto`'s (the same function, one synchronous call per record).
   */
  readonly cipher?: AesGcm;
}

/** The store marker `encryption.json` (in the clear: it names the cipher and the kids, and proves a key fits). */
interface StoreMarker {
  readonly format: "sessionfold-encrypted-store";
  readonly version: 1;
  readonly cipher: "AES-256-GCM";
  /** The kid new data keys are wrapped with. */
  readonly current_kid: string;
  /** Per kid: a random key wrapped by it, which unwraps only with the right KEK. */
  readonly kids: Readonly<Record<string, { readonly check: string }>>;
  /** Present while {@linkcode EncryptedStorage.migrate} encrypts a store in place: nobody else opens it. */
  readonly migration?: "in-progress";
}

/** What {@linkcode EncryptedStorage.migrate} did. */
export interface MigrationReport {
  /** Session folders (live and archived) whose files were sealed. */
  readonly sessions: number;
  /** Files sealed (or sealed again, when a migration is resumed). */
  readonly files: number;
}

/** What {@linkcode EncryptedStorage.rotate} did. */
export interface RotationReport {
  readonly kid: string;
  /** Session folders whose data keys were re-wrapped. */
  readonly sessions: number;
  readonly dataKeys: number;
}

/** A session's keys as this handle knows them. */
interface SessionKeys {
  file: SessionKeysFile | undefined;
  readonly opened: Map<string, CryptoKey>;
  sealing?: Promise<{ readonly id: string; readonly key: CryptoKey }> | undefined;
}

const NEWLINE = 0x0a;
const NEWLINE_BYTES = new Uint8Array([NEWLINE]);
const utf8 = new TextEncoder();
const KEY_CHECK_CONTEXT = new Uint8Array(utf8.encode(JSON.stringify(["sessionfold-key-check", 1])));

/** One stored line: its bytes without the newline, and whether a newline ended it. */
interface Piece {
  readonly bytes: Uint8Array;
  readonly newline: boolean;
}

function splitLines(bytes: Uint8Array): Piece[] {
  const pieces: Piece[] = [];
  let start = 0;
  for (let i = bytes.indexOf(NEWLINE); i !== -1; i = bytes.indexOf(NEWLINE, start)) {
    pieces.push({ bytes: bytes.subarray(start, i), newline: true });
    start = i + 1;
  }
  if (start < bytes.length) pieces.push({ bytes: bytes.subarray(start), newline: false });
  return pieces;
}

async function sha256(bytes: Uint8Array): Promise<string> {
  return toBase64(new Uint8Array(await crypto.subtle.digest("SHA-256", new Uint8Array(bytes))));
}

/** What the core is shown for a stored line that does not open: not JSON, so recovery reports it where it is; its stored bytes kept in base64 for the quarantine. */
function refusedLine(reason: string, stored: Uint8Array): Uint8Array {
  return utf8.encode(`sealed record refused (${reason}): ${toBase64(stored)}`);
}

function isBlank(bytes: Uint8Array): boolean {
  return bytes.every((b) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09);
}

/**
 * The encrypting decorator of a {@linkcode StoragePort}. Open it with
 * {@linkcode EncryptedStorage.open} (or create a new encrypted store with
 * {@linkcode EncryptedStorage.create}) and give it to `Sessions` like any storage.
 *
 * @example
 * ```ts
 * import { importKeyEncryptionKey, keyring, MemoryStorage, Sessions } from "sessionfold";
 * const kek = await importKeyEncryptionKey(crypto.getRandomValues(new Uint8Array(32)));
 * const storage = await EncryptedStorage.create(new MemoryStorage(), keyring({ k1: kek }, "k1"));
 * const sessions = new Sessions({ storage });
 * ```
 */
export class EncryptedStorage implements StoragePort {
  readonly #inner: StoragePort;
  readonly #provider: KeyProvider;
  #marker: StoreMarker;
  readonly #options: EncryptedStorageOptions;
  readonly #sessions = new Map<string, Promise<SessionKeys>>();
  /** Only inside {@linkcode EncryptedStorage.migrate}: a record that is not an envelope is read as the plaintext it is. */
  #migrating = false;

  /** The kid new data keys are wrapped with (the store marker's `current_kid`). */
  get currentKid(): string {
    return this.#marker.current_kid;
  }

  /** The backend under the decorator: what a sync engine copies (ciphertext as is). */
  get inner(): StoragePort {
    return this.#inner;
  }

  /** Optional port methods exist exactly when the backend has them (the core tests for them). */
  acquireLock?: (name: string) => Promise<boolean>;
  releaseLock?: (name: string) => Promise<void>;
  pinFile?: (path: string) => Promise<void>;
  unpinFile?: (path: string) => Promise<void>;
  storeIdentity?: () => Promise<string>;
  close?: () => Promise<void>;

  private constructor(inner: StoragePort, provider: KeyProvider, marker: StoreMarker, options: EncryptedStorageOptions) {
    this.#inner = inner;
    this.#provider = provider;
    this.#marker = marker;
    this.#options = options;
    if (inner.acquireLock && inner.releaseLock) {
      this.acquireLock = (name) => inner.acquireLock!(name);
      this.releaseLock = (name) => inner.releaseLock!(name);
    }
    if (inner.pinFile && inner.unpinFile) {
      this.pinFile = (path) => inner.pinFile!(path);
      this.unpinFile = (path) => inner.unpinFile!(path);
    }
    if (inner.storeIdentity) this.storeIdentity = () => inner.storeIdentity!();
    if (inner.close) this.close = () => inner.close!();
  }

  /**
   * Whether the store under `inner` is encrypted (its `encryption.json` exists).
   *
   * @example
   * ```ts
   * import { MemoryStorage } from "sessionfold";
   * await EncryptedStorage.isEncrypted(new MemoryStorage()); // false
   * ```
   */
  static async isEncrypted(inner: StoragePort): Promise<boolean> {
    return (await inner.readTail(STORE_MARKER, 0)) !== undefined;
  }

  /**
   * Opens an encrypted store.
   *
   * @example
   * ```ts
   * import { MemoryStorage, type KeyProvider } from "sessionfold";
   * declare const provider: KeyProvider;
   * const storage = await EncryptedStorage.open(new MemoryStorage(), provider);
   * ```
   * @throws {KeyRequiredError} when no provider is given, or it holds no key the store names.
   * @throws {WrongKeyError} when the provider's key for the store's current kid does not fit.
   * @throws {InvalidInputError} when the store is not encrypted.
   */
  static async open(inner: StoragePort, provider: KeyProvider | undefined, options: EncryptedStorageOptions = {}): Promise<EncryptedStorage> {
    const marker = await readMarker(inner);
    if (!marker) throw new InvalidInputError(`the store is not encrypted (no ${STORE_MARKER}); encrypt it first`, { file: STORE_MARKER });
    if (!provider) {
      throw new KeyRequiredError(
        `the store is encrypted (kid ${
          JSON.stringify(marker.current_kid)
        }): give its key (the \`keys\` option's KeyProvider; on the command line --key-file FILE or SESSIONFOLD_KEY_FILE)`,
        {
          kid: marker.current_kid,
        },
      );
    }
    await checkKey(provider, marker, marker.current_kid);
    if (marker.migration) {
      throw new InvalidInputError(`${STORE_MARKER}: the store is being encrypted in place (an interrupted migration): run the migration again to finish it`, {
        file: STORE_MARKER,
      });
    }
    return new EncryptedStorage(inner, provider, marker, options);
  }

  /**
   * Encrypts a store in the clear in place, crash-safely: the marker is written first with
   * `"migration": "in-progress"` (every open is refused while it is there), then every file of
   * every session (live and archived) is read (a plaintext record as it is, an envelope opened)
   * and replaced, atomically, by its sealed form; the flag goes last. Killed at any point, the
   * store holds each file whole, plaintext or sealed, and running it again finishes the job.
   * The catalogs are rebuilt from the sealed files last. Run it while nothing else writes the
   * store. The only time a plaintext record is read from an encrypted store.
   *
   * @example
   * ```ts
   * import { MemoryStorage, type KeyProvider } from "sessionfold";
   * declare const provider: KeyProvider;
   * const report = await EncryptedStorage.migrate(new MemoryStorage(), provider);
   * ```
   * @throws {WrongKeyError} when the store is already (partly) encrypted under another key.
   * @throws {InvalidInputError} when a sealed record does not open (the store is damaged: verify and repair it first).
   */
  static async migrate(inner: StoragePort, provider: KeyProvider, options: EncryptedStorageOptions = {}): Promise<MigrationReport> {
    let marker = await readMarker(inner);
    if (marker) await checkKey(provider, marker, marker.current_kid);
    else {
      const kid = provider.currentKid;
      marker = {
        format: "sessionfold-encrypted-store",
        version: 1,
        cipher: "AES-256-GCM",
        current_kid: kid,
        kids: { [kid]: await keyCheck(provider, kid) },
        migration: "in-progress",
      };
      if (!(await inner.createExclusive(STORE_MARKER, encodeMarker(marker)))) return EncryptedStorage.migrate(inner, provider, options);
    }
    if (!marker.migration) return { sessions: 0, files: 0 };
    const refused: SealRefusal[] = [];
    const storage = new EncryptedStorage(inner, provider, marker, { ...options, onRefused: (refusal) => refused.push(refusal) });
    storage.#migrating = true;
    let files = 0;
    const folders = await storage.#sessionFolders();
    for (const { dir } of folders) {
      for (const path of await filesUnder(inner, dir)) {
        if (sealedKindOf(path).kind === "clear") continue;
        const view = await storage.read(path);
        if (refused.length > 0) {
          throw new InvalidInputError(
            `${refused[0]!.path}${refused[0]!.line ? `:${refused[0]!.line}` : ""}: a sealed record does not open (${
              refused[0]!.reason
            }); nothing more was encrypted`,
            { file: refused[0]!.path },
          );
        }
        if (view === undefined) continue;
        await storage.replace(path, view);
        files++;
      }
    }
    // The catalogs (docs/FORMAT.md "The catalog") hold listing fields written while the store
    // was in the clear, titles included: rebuilt from the sealed meta.json files, they keep only
    // what those keep in the clear.
    for (const agent of await inner.list("agents")) {
      for (const workspace of await inner.list(`agents/${agent}/workspaces`)) {
        for (const place of ["sessions", "archived-sessions"]) await inner.rebuildCatalog?.(`agents/${agent}/workspaces/${workspace}/${place}`);
      }
    }
    const { migration: _done, ...finished } = marker;
    await inner.replace(STORE_MARKER, encodeMarker(finished));
    return { sessions: folders.length, files };
  }

  /**
   * Makes `inner` an encrypted store whose data keys are wrapped by the provider's current
   * KEK, or opens it when it already is one. A store that already holds sessions in the clear
   * is refused: encrypting it is a migration, not a creation.
   *
   * @example
   * ```ts
   * import { MemoryStorage, type KeyProvider } from "sessionfold";
   * declare const provider: KeyProvider;
   * const storage = await EncryptedStorage.create(new MemoryStorage(), provider);
   * ```
   * @throws {InvalidInputError} when the store already holds plaintext sessions.
   * @throws {WrongKeyError} when it is already encrypted under a key the provider does not hold.
   */
  static async create(inner: StoragePort, provider: KeyProvider, options: EncryptedStorageOptions = {}): Promise<EncryptedStorage> {
    if (await EncryptedStorage.isEncrypted(inner)) return EncryptedStorage.open(inner, provider, options);
    if ((await inner.list("agents")).length > 0) {
      throw new InvalidInputError("the store already holds sessions in the clear: encrypting them is a migration, not a new encrypted store", {
        file: "agents",
      });
    }
    const kid = provider.currentKid;
    const marker: StoreMarker = {
      format: "sessionfold-encrypted-store",
      version: 1,
      cipher: "AES-256-GCM",
      current_kid: kid,
      kids: { [kid]: await keyCheck(provider, kid) },
    };
    if (!(await inner.createExclusive(STORE_MARKER, encodeMarker(marker)))) return EncryptedStorage.open(inner, provider, options);
    return new EncryptedStorage(inner, provider, marker, options);
  }

  /**
   * Rotates the key-encryption key to the provider's current kid: every session's data keys
   * (live and archived) are re-wrapped under it and retired, so history is never rewritten and
   * every new seal uses a new data key. Crash-safe: each `keys.json` is replaced whole, and the
   * store's current kid changes only after every session is re-wrapped; running it again
   * finishes the job. Run it while no other process writes the store.
   *
   * @example
   * ```ts
   * declare const storage: EncryptedStorage;
   * const report = await storage.rotate();
   * ```
   * @throws {KeyRequiredError} when a data key is wrapped by a kid the provider does not hold.
   * @throws {WrongKeyError} when the provider's key for a kid does not fit.
   */
  async rotate(): Promise<RotationReport> {
    const kid = this.#provider.currentKid;
    if (!this.#marker.kids[kid]) {
      this.#marker = { ...this.#marker, kids: { ...this.#marker.kids, [kid]: await keyCheck(this.#provider, kid) } };
      await this.#inner.replace(STORE_MARKER, encodeMarker(this.#marker));
    } else {
      await checkKey(this.#provider, this.#marker, kid);
    }
    let sessions = 0;
    let dataKeys = 0;
    for (const { dir, session } of await this.#sessionFolders()) {
      const file = await this.#readKeysFile(dir);
      if (!file) continue;
      const keys: StoredDataKey[] = [];
      for (const stored of file.keys) {
        if (stored.kid === kid && stored.retired) {
          keys.push(stored);
          continue;
        }
        const rewrapped = await rewrapDataKey(this.#provider, kid, session, stored);
        if ("failure" in rewrapped) throw unwrapError(rewrapped, `${dir}/${SESSION_KEYS_FILE}`);
        keys.push(rewrapped);
        dataKeys++;
      }
      await this.#inner.replace(`${dir}/${SESSION_KEYS_FILE}`, encodeSessionKeys({ ...file, keys }));
      this.#sessions.delete(dir);
      sessions++;
    }
    this.#marker = { ...this.#marker, current_kid: kid, kids: { [kid]: this.#marker.kids[kid]! } };
    await this.#inner.replace(STORE_MARKER, encodeMarker(this.#marker));
    return { kid, sessions, dataKeys };
  }

  /**
   * The plaintext of `stored`, bytes sealed for `path` that come from another replica of the
   * store (a sync server's copy, docs/SYNC.md "End-to-end encrypted sessions"), opened with
   * that replica's `keys.json` (`keys`, its text) rather than this store's. `whole`: the bytes
   * are the whole file (a segment: its order and footer are checked from its first line).
   *
   * @example
   * ```ts
   * declare const storage: EncryptedStorage, sealedLine: string, keysJson: string;
   * const path = "agents/a1/workspaces/w1/sessions/s1/messages/active.jsonl";
   * const plaintext = await storage.openStored(path, new TextEncoder().encode(`${sealedLine}\n`), { keys: keysJson, whole: false });
   * ```
   * @throws {CorruptSessionError} naming the path and line of the first record that does not open (tampered, moved, plaintext).
   * @throws {KeyRequiredError} when a data key is wrapped by a kid the key provider does not hold.
   * @throws {WrongKeyError} when the provider's key does not open a data key.
   */
  async openStored(path: string, stored: Uint8Array, options: { readonly keys: string; readonly whole: boolean }): Promise<Uint8Array> {
    const kind = sealedKindOf(path);
    if (kind.kind === "clear") return stored;
    const file = parseSessionKeys(utf8.encode(options.keys));
    if (!file || file.session !== kind.place.session) {
      throw new CorruptSessionError(`${path}: the keys sent with it are not ${kind.place.session}'s keys.json`, { file: path, line: null });
    }
    const keys: SessionKeys = { file, opened: new Map() };
    if (kind.kind === "document") {
      const opened = await this.#openOne(path, null, kind.dir, kind.place, kind.fields, stored, keys);
      if (opened instanceof EnvelopeRefusal) throw new CorruptSessionError(`${path}: ${opened.reason}`, { file: path, line: null });
      return opened;
    }
    const { bytes, refused } = await this.#openLines(path, kind, stored, options.whole, keys);
    const first = refused[0];
    if (first) throw new CorruptSessionError(`${path}:${first.line}: ${first.reason}`, { file: path, line: first.line });
    return bytes;
  }

  /**
   * The stored (sealed) form of plaintext `bytes` written to `path`, under the session's
   * current data key, without writing it: what a sync engine sends for a place of this store.
   *
   * @example
   * ```ts
   * declare const storage: EncryptedStorage;
   * const path = "agents/a1/workspaces/w1/sessions/s1/messages/active.jsonl";
   * const sealed = await storage.sealStored(path, new TextEncoder().encode('{"record_type":"message","sequence":1}\n'));
   * ```
   */
  sealStored(path: string, bytes: Uint8Array): Promise<Uint8Array> {
    return this.#seal(path, bytes, false);
  }

  async read(path: string): Promise<Uint8Array | undefined> {
    const kind = sealedKindOf(path);
    const stored = await this.#inner.read(path);
    if (kind.kind === "clear" || stored === undefined) return stored;
    if (kind.kind === "lines") return (await this.#openLines(path, kind, stored, true)).bytes;
    return this.#openDocument(path, kind, stored);
  }

  async readTail(path: string, maxBytes: number): Promise<FileTail | undefined> {
    const kind = sealedKindOf(path);
    if (kind.kind === "clear" || (kind.kind === "document" && maxBytes === 0)) return this.#inner.readTail(path, maxBytes);
    if (kind.kind === "document") {
      const bytes = await this.read(path);
      return bytes && { bytes: bytes.subarray(Math.max(0, bytes.length - maxBytes)), size: bytes.length };
    }
    if (maxBytes === 0) {
      // The size of the plaintext view, which the core's byte counts (history_bytes) are in: a
      // whole read, taken only where the core rebuilds or verifies (docs/FORMAT.md "Encrypted stores").
      const view = await this.read(path);
      return view && { bytes: new Uint8Array(), size: view.length };
    }
    // Envelopes are longer than their plaintext: read a larger window, open its whole lines.
    const tail = await this.#inner.readTail(path, maxBytes * 2 + 1024);
    if (!tail) return undefined;
    const whole = tail.bytes.length >= tail.size;
    // A window that begins inside a line drops that line; one inside a single line holds none yet.
    const cut = tail.bytes.indexOf(NEWLINE);
    const lines = whole ? tail.bytes : cut === -1 ? new Uint8Array() : tail.bytes.subarray(cut + 1);
    const { bytes } = await this.#openLines(path, kind, lines, whole);
    // A view of the whole file has the view's size; a partial one keeps the stored size, which is larger than any view of it.
    return { bytes, size: whole ? bytes.length : tail.size };
  }

  list(dir: string): Promise<string[]> {
    const listed = this.#inner.list(dir);
    return sessionFolderOf(dir) ? listed.then((names) => names.filter((name) => name !== SESSION_KEYS_FILE)) : listed;
  }

  async replace(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<void> {
    await this.#inner.replace(path, await this.#seal(path, bytes, false), options);
  }

  async append(path: string, bytes: Uint8Array): Promise<void> {
    await this.#inner.append(path, await this.#seal(path, bytes, true));
  }

  async createExclusive(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<boolean> {
    return this.#inner.createExclusive(path, await this.#seal(path, bytes, false), options);
  }

  /** Cuts the stored file after the stored line that ends where the view's `length` does (recovery cuts only at line ends). */
  async truncate(path: string, length: number): Promise<void> {
    const kind = sealedKindOf(path);
    if (kind.kind !== "lines") return this.#inner.truncate(path, length);
    const stored = (await this.#inner.read(path)) ?? new Uint8Array();
    const { ends } = await this.#openLines(path, kind, stored, true);
    const at = ends.find((end) => end.view === length);
    if (length !== 0 && !at) {
      throw new InvalidInputError(`${path}: cannot cut the plaintext view at byte ${length}, which is not the end of a line`, { path, length });
    }
    await this.#inner.truncate(path, at?.stored ?? 0);
  }

  /** Removes; a session folder loses its `keys.json` first, so a crash half-way leaves only ciphertext nobody can open (crypto-shredding). */
  async remove(path: string, options?: WriteOptions): Promise<void> {
    if (sessionFolderOf(path)) await this.#inner.remove(`${path}/${SESSION_KEYS_FILE}`);
    this.#forget(path);
    await this.#inner.remove(path, options);
  }

  async move(from: string, to: string): Promise<boolean> {
    this.#forget(from);
    this.#forget(to);
    return this.#inner.move(from, to);
  }

  /** Seals the plan's writes, then runs it on the backend (in one call when it offers one). */
  async applyCommitPlan(plan: CommitPlan): Promise<CommitPlanResult> {
    const writes = await Promise.all(plan.writes.map(async (write) => ({ ...write, bytes: await this.#seal(write.path, write.bytes, write.op === "append") })));
    const sealed = { ...plan, writes };
    return this.#inner.applyCommitPlan ? this.#inner.applyCommitPlan(sealed) : applyCommitPlanByCalls(this.#inner, sealed);
  }

  #forget(path: string): void {
    for (const dir of this.#sessions.keys()) if (dir === path || dir.startsWith(`${path}/`)) this.#sessions.delete(dir);
  }

  #refuse(path: string, line: number | null, reason: string): void {
    this.#options.onRefused?.({ path, line, reason });
  }

  async #seal(path: string, bytes: Uint8Array, appending: boolean): Promise<Uint8Array> {
    const kind = sealedKindOf(path);
    if (kind.kind === "clear") return bytes;
    const { id, key } = await this.#sealingKey(kind.dir, kind.place.session);
    if (kind.kind === "document") {
      if (isBlank(bytes)) return bytes;
      const sealed = await sealBytes(bytes, key, id, clearFieldsOf(parseRecord(bytes), kind.fields), kind.fields, kind.place, this.#options.cipher);
      return concatBytes([sealed, NEWLINE_BYTES]);
    }
    const pieces = splitLines(bytes);
    const records = pieces.map((piece) => (piece.bytes.length === 0 ? undefined : parseRecord(piece.bytes)));
    // A segment's footer seals the segment: its clear part counts the lines before it and chains their stored bytes.
    const footerAt = kind.segment ? records.findIndex((record) => (record as { record_type?: unknown } | undefined)?.record_type === "summary") : -1;
    const sealed = await Promise.all(
      pieces.map(async (piece, i) => (piece.bytes.length === 0 || i === footerAt ? undefined : this.#sealLine(piece.bytes, records[i], key, id, kind.place))),
    );
    if (footerAt !== -1) {
      const before = appending ? ((await this.#inner.read(path)) ?? new Uint8Array()) : new Uint8Array();
      const earlier = concatBytes([
        before,
        ...sealed.slice(0, footerAt).map((line, i) => concatBytes([line ?? new Uint8Array(), pieces[i]!.newline ? NEWLINE_BYTES : new Uint8Array()])),
      ]);
      const lines = splitLines(earlier).length;
      sealed[footerAt] = await this.#sealLine(pieces[footerAt]!.bytes, records[footerAt], key, id, kind.place, { lines, chain: await sha256(earlier) });
    }
    return concatBytes(pieces.flatMap((piece, i) => [sealed[i] ?? piece.bytes, piece.newline ? NEWLINE_BYTES : new Uint8Array()]));
  }

  async #sealLine(
    bytes: Uint8Array,
    record: unknown,
    key: CryptoKey,
    id: string,
    place: SealPlace,
    footer?: { lines: number; chain: string },
  ): Promise<Uint8Array> {
    const { lines: _lines, chain: _chain, ...clear } = clearFieldsOf(record, LINE_CLEAR_FIELDS);
    return sealBytes(bytes, key, id, { ...clear, ...footer }, LINE_CLEAR_FIELDS, place, this.#options.cipher);
  }

  async #openDocument(path: string, kind: Extract<SealedKind, { kind: "document" }>, stored: Uint8Array): Promise<Uint8Array> {
    // What a repair moved to the quarantine keeps its stored bytes: it is sealed for the place it left.
    if (kind.quarantined || isBlank(stored)) return stored;
    const opened = await this.#openOne(path, null, kind.dir, kind.place, kind.fields, stored);
    return opened instanceof EnvelopeRefusal ? utf8.encode(`sealed document refused (${opened.reason})\n`) : opened;
  }

  async #openOne(
    path: string,
    line: number | null,
    dir: string,
    place: SealPlace,
    fields: ClearFields,
    stored: Uint8Array,
    given?: SessionKeys,
  ): Promise<Uint8Array | EnvelopeRefusal> {
    const parsed = parseEnvelope(stored, fields);
    if (this.#migrating && parsed instanceof EnvelopeRefusal) return stored;
    const key = parsed instanceof EnvelopeRefusal ? parsed : await this.#openingKey(dir, place.session, parsed.key, given);
    const result = key instanceof EnvelopeRefusal ? key : await openEnvelope(parsed as Envelope, key, fields, place, this.#options.cipher);
    if (result instanceof EnvelopeRefusal) this.#refuse(path, line, result.reason);
    return result;
  }

  /**
   * The plaintext view of stored JSONL bytes (whole lines, maybe a final one without its
   * newline), with each line's end in the view and in the stored bytes. Lines of a session's
   * messages must carry consecutive sequences; a segment's must start at its first sequence
   * and end with a footer whose count and chain match the lines before it.
   */
  async #openLines(
    path: string,
    kind: Extract<SealedKind, { kind: "lines" }>,
    stored: Uint8Array,
    fromStart: boolean,
    given?: SessionKeys,
  ): Promise<{ bytes: Uint8Array; ends: { view: number; stored: number }[]; refused: { line: number; reason: string }[] }> {
    const pieces = splitLines(stored);
    const envelopes = pieces.map((piece) => (piece.bytes.length === 0 ? undefined : parseEnvelope(piece.bytes, LINE_CLEAR_FIELDS)));
    // Each data key once for the whole file, then every line at once.
    const ids = new Set(envelopes.flatMap((envelope) => (envelope && !(envelope instanceof EnvelopeRefusal) ? [envelope.key] : [])));
    const keys = new Map(await Promise.all([...ids].map(async (id) => [id, await this.#openingKey(kind.dir, kind.place.session, id, given)] as const)));
    const pending = pieces.map((piece, i) => {
      const envelope = envelopes[i];
      if (!envelope || (this.#migrating && envelope instanceof EnvelopeRefusal)) return piece.bytes;
      const key = envelope instanceof EnvelopeRefusal ? envelope : keys.get(envelope.key)!;
      return key instanceof EnvelopeRefusal ? key : openEnvelope(envelope as Envelope, key, LINE_CLEAR_FIELDS, kind.place, this.#options.cipher);
    });
    // Every line at once: one Promise.all when the cipher is asynchronous (WebCrypto), none when it answers at once.
    const opened: (Uint8Array | EnvelopeRefusal)[] = pending.some((p) => p instanceof Promise)
      ? await Promise.all(pending)
      : (pending as (Uint8Array | EnvelopeRefusal)[]);
    opened.forEach((result, i) => {
      if (result instanceof EnvelopeRefusal) this.#refuse(path, fromStart ? i + 1 : null, result.reason);
    });
    if (kind.ordered) await this.#checkOrder(path, kind, pieces, envelopes, opened, fromStart);
    const chunks: Uint8Array[] = [];
    const ends: { view: number; stored: number }[] = [];
    const refused: { line: number; reason: string }[] = [];
    let view = 0;
    let at = 0;
    pieces.forEach((piece, i) => {
      const result = opened[i]!;
      if (result instanceof EnvelopeRefusal) refused.push({ line: i + 1, reason: result.reason });
      const shown = result instanceof EnvelopeRefusal ? refusedLine(piece.newline ? result.reason : "torn or unreadable final line", piece.bytes) : result;
      chunks.push(shown);
      view += shown.length + (piece.newline ? 1 : 0);
      at += piece.bytes.length + (piece.newline ? 1 : 0);
      if (piece.newline) chunks.push(NEWLINE_BYTES);
      ends.push({ view, stored: at });
    });
    return { bytes: concatBytes(chunks), ends, refused };
  }

  async #checkOrder(
    path: string,
    kind: Extract<SealedKind, { kind: "lines" }>,
    pieces: readonly Piece[],
    envelopes: readonly (ReturnType<typeof parseEnvelope> | undefined)[],
    opened: (Uint8Array | EnvelopeRefusal)[],
    fromStart: boolean,
  ): Promise<void> {
    let previous: number | undefined = fromStart && kind.segment ? kind.segment.start - 1 : undefined;
    let footerSeen = false;
    for (let i = 0; i < pieces.length; i++) {
      const envelope = envelopes[i];
      const line = fromStart ? i + 1 : null;
      const refuse = (reason: string): void => {
        opened[i] = new EnvelopeRefusal(reason);
        this.#refuse(path, line, reason);
      };
      if (!envelope || envelope instanceof EnvelopeRefusal || opened[i] instanceof EnvelopeRefusal) {
        // After a line that does not open, the next one starts the order again: one bad line, one diagnostic.
        previous = undefined;
        continue;
      }
      if (footerSeen) {
        refuse("a line after the segment's footer");
        continue;
      }
      const { record_type: type, sequence, through_sequence: through } = envelope.clear;
      if (type === "message" && typeof sequence === "number") {
        if (previous !== undefined && sequence !== previous + 1) {
          refuse(`sequence ${sequence} where ${previous + 1} belongs: a line swapped, replayed or removed`);
          previous = undefined;
        } else previous = sequence;
      } else if (type === "summary" && kind.segment) {
        footerSeen = true;
        if (!fromStart) continue;
        const { lines, chain } = envelope.clear;
        if (
          through !== previous || lines !== i || chain !== (await sha256(concatBytes(pieces.slice(0, i).map((p) => concatBytes([p.bytes, NEWLINE_BYTES])))))
        ) {
          refuse(`the footer does not seal the ${i} lines before it (through ${String(through)}, ${String(lines)} lines): the segment was cut or changed`);
        }
      }
    }
  }

  /** The data key new seals of a session use: its newest key that is not retired, or a new one (made once, however many seals wait for it). */
  async #sealingKey(dir: string, session: string): Promise<{ id: string; key: CryptoKey }> {
    const keys = await this.#keysOf(dir);
    keys.sealing ??= this.#chooseSealingKey(dir, session, keys);
    keys.sealing.catch(() => {
      keys.sealing = undefined;
    });
    return keys.sealing;
  }

  async #chooseSealingKey(dir: string, session: string, keys: SessionKeys): Promise<{ id: string; key: CryptoKey }> {
    const usable = keys.file?.keys.findLast((stored) => !stored.retired);
    if (usable) return { id: usable.id, key: await this.#unwrap(dir, session, usable, keys) };
    const made = await newDataKey(this.#provider, this.#marker.current_kid, session, new Date((this.#options.clock ?? Date.now)()).toISOString());
    const file: SessionKeysFile = keys.file
      ? { ...keys.file, keys: [...keys.file.keys, made.stored] }
      : { format: "sessionfold-session-keys", version: 1, session, keys: [made.stored] };
    const path = `${dir}/${SESSION_KEYS_FILE}`;
    if (keys.file) await this.#inner.replace(path, encodeSessionKeys(file));
    else if (!(await this.#inner.createExclusive(path, encodeSessionKeys(file)))) {
      // Another handle made the first key at the same time: use its file.
      keys.file = await this.#readKeysFile(dir);
      return this.#chooseSealingKey(dir, session, keys);
    }
    keys.file = file;
    keys.opened.set(made.stored.id, made.key);
    return { id: made.stored.id, key: made.key };
  }

  /** The data key `id` of a session, or a refusal when its `keys.json` has no such key (destroyed, or the line came from elsewhere). */
  async #openingKey(dir: string, session: string, id: string, given?: SessionKeys): Promise<CryptoKey | EnvelopeRefusal> {
    let keys = given ?? (await this.#keysOf(dir));
    const cached = keys.opened.get(id);
    if (cached) return cached;
    let stored = keys.file?.keys.find((k) => k.id === id);
    if (!stored && !given) {
      // Another handle may have added a key since this one read the file.
      this.#sessions.delete(dir);
      keys = await this.#keysOf(dir);
      stored = keys.file?.keys.find((k) => k.id === id);
    }
    if (!keys.file) return new EnvelopeRefusal("the session has no data keys (keys.json is missing: deleted or never encrypted)");
    if (keys.file.session !== session) return new EnvelopeRefusal(`keys.json belongs to session ${keys.file.session.slice(0, 60)}`);
    if (!stored) return new EnvelopeRefusal(`data key ${id.slice(0, 24)} is not one of this session's`);
    return this.#unwrap(dir, session, stored, keys);
  }

  async #unwrap(dir: string, session: string, stored: StoredDataKey, keys: SessionKeys): Promise<CryptoKey> {
    const key = await unwrapDataKey(this.#provider, session, stored);
    if ("failure" in key) throw unwrapError(key, `${dir}/${SESSION_KEYS_FILE}`);
    keys.opened.set(stored.id, key);
    return key;
  }

  #keysOf(dir: string): Promise<SessionKeys> {
    let keys = this.#sessions.get(dir);
    if (!keys) {
      keys = this.#readKeysFile(dir).then((file) => ({ file, opened: new Map<string, CryptoKey>() }));
      keys.catch(() => this.#sessions.delete(dir));
      this.#sessions.set(dir, keys);
    }
    return keys;
  }

  async #readKeysFile(dir: string): Promise<SessionKeysFile | undefined> {
    const bytes = await this.#inner.read(`${dir}/${SESSION_KEYS_FILE}`);
    return bytes && parseSessionKeys(bytes);
  }

  /** Every session folder of the store, live and archived (the layout of docs/FORMAT.md). */
  async #sessionFolders(): Promise<{ dir: string; session: string }[]> {
    const found: { dir: string; session: string }[] = [];
    for (const agent of await this.#inner.list("agents")) {
      for (const workspace of await this.#inner.list(`agents/${agent}/workspaces`)) {
        for (const place of ["sessions", "archived-sessions"]) {
          const parent = `agents/${agent}/workspaces/${workspace}/${place}`;
          for (const name of await this.#inner.list(parent)) {
            const folder = sessionFolderOf(`${parent}/${name}`);
            if (folder) found.push(folder);
          }
        }
      }
    }
    return found;
  }
}

/**
 * The storage a host should use for the store under `inner`, given the key it has (or none):
 * an encrypted store opens with its key (without one: `KeyRequiredError`); a store in the
 * clear is used as it is without a key, and becomes encrypted with one only while it is still
 * empty (a store that already holds plaintext sessions is refused: encrypting it is a
 * migration). Nothing is written unless a new encrypted store is created.
 *
 * @example
 * ```ts
 * import { MemoryStorage, Sessions, type KeyProvider } from "sessionfold";
 * declare const provider: KeyProvider | undefined;
 * const sessions = new Sessions({ storage: await storageForKeys(new MemoryStorage(), provider) });
 * ```
 * @throws {KeyRequiredError} for an encrypted store without a key.
 * @throws {WrongKeyError} when the key does not open it.
 * @throws {InvalidInputError} for a key given to a store that holds plaintext sessions, or keys that are not a `KeyProvider`.
 */
export async function storageForKeys(inner: StoragePort, provider: KeyProvider | undefined, options: EncryptedStorageOptions = {}): Promise<StoragePort> {
  if (provider !== undefined) {
    assertMethods(provider, "keys", "a KeyProvider { currentKid, wrapKey, unwrapKey }", ["wrapKey", "unwrapKey"]);
    assertFields(provider, "keys", { currentKid: "string!" });
  }
  if (await EncryptedStorage.isEncrypted(inner)) return EncryptedStorage.open(inner, provider, options);
  return provider ? EncryptedStorage.create(inner, provider, options) : inner;
}

/** The JSON value of a plaintext line or document, or `undefined` when it is not JSON (then nothing of it is in the clear). */
function parseRecord(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return undefined;
  }
}

function unwrapError(failure: { failure: "no-key" | "wrong-key"; kid: string }, file: string): KeyRequiredError | WrongKeyError {
  return failure.failure === "no-key"
    ? new KeyRequiredError(`${file}: a data key is wrapped by kid ${JSON.stringify(failure.kid)}, which the key provider does not hold`, {
      kid: failure.kid,
      file,
    })
    : new WrongKeyError(`${file}: the key given for kid ${JSON.stringify(failure.kid)} does not open this session's data key`, { kid: failure.kid, file });
}

async function readMarker(inner: StoragePort): Promise<StoreMarker | undefined> {
  const bytes = await inner.read(STORE_MARKER);
  if (!bytes) return undefined;
  try {
    const marker = JSON.parse(new TextDecoder().decode(bytes)) as StoreMarker;
    if (marker.format === "sessionfold-encrypted-store" && marker.version === 1 && typeof marker.current_kid === "string" && typeof marker.kids === "object") {
      return marker;
    }
  } catch {
    // Reported below.
  }
  throw new InvalidInputError(`${STORE_MARKER}: not an encrypted store's marker of version 1; refusing to guess`, { file: STORE_MARKER });
}

function encodeMarker(marker: StoreMarker): Uint8Array {
  return utf8.encode(`${JSON.stringify(marker, null, 2)}\n`);
}

async function keyCheck(provider: KeyProvider, kid: string): Promise<{ check: string }> {
  return { check: toBase64(await provider.wrapKey(kid, crypto.getRandomValues(new Uint8Array(32)), KEY_CHECK_CONTEXT)) };
}

async function checkKey(provider: KeyProvider, marker: StoreMarker, kid: string): Promise<void> {
  const check = marker.kids[kid]?.check;
  const wrapped = check === undefined ? undefined : fromBase64(check);
  if (!wrapped) throw new KeyRequiredError(`${STORE_MARKER}: the store has no key check for kid ${JSON.stringify(kid)}`, { kid });
  let opened: Uint8Array | undefined;
  try {
    opened = await provider.unwrapKey(kid, wrapped, KEY_CHECK_CONTEXT);
  } catch {
    throw new WrongKeyError(`the key given for kid ${JSON.stringify(kid)} does not open this store`, { kid });
  }
  if (!opened) {
    throw new WrongKeyError(`the store is encrypted under kid ${JSON.stringify(kid)}; the key given holds ${JSON.stringify(provider.currentKid)}`, { kid });
  }
}
