/**
 * The sync server's change log (docs/SYNC.md "Pull by cursor"): a store-wide sequence of
 * entries, each naming the sessions one applied mutation touched, kept in the server's own
 * store (`sync/changes/<page>/<seq>.json`). A pull by cursor reads the entries after the
 * cursor's and the heads of the sessions they name, so the cursor is constant-size and a pull
 * costs what changed, not what the store holds.
 *
 * Entries are created with `createExclusive` at the number after the last one, so several
 * servers on one store number them without a gap: a number is taken only once the one before
 * it exists. An entry is written after its mutation's data and before the client's ledger; a
 * crash between the data and the entry leaves the ledger behind too, so the client's retry
 * (which finds its effect in the data) writes the entry then. What no retry announces (a
 * client that never comes back, another writer of the store that does not go through sync)
 * is found by the sweep: at most every `sweepIntervalMs` a pull compares every session's
 * place and revision with the last sweep's and logs what differs.
 *
 * @module
 */
import { encodeJsonDocument } from "../schema/mod.ts";
import type { StoragePort } from "../storage/port.ts";
import { refused } from "./protocol.ts";

/** One entry: its number, a random id (a restored or rewritten log has other ids), the refs it names. */
interface ChangeEntry {
  readonly seq: number;
  readonly id: string;
  readonly refs: readonly string[];
}

/** Where the log is: pages of {@linkcode PAGE} entries, the newest {@linkcode KEPT_PAGES} kept. */
const DIR = "sync/changes";
const PAGE = 1024;
const KEPT_PAGES = 64;
/** When the last sweep ran (read by every pull), and every session's `place:revision` then (read by the next sweep). */
const SWEPT = "sync/changes-swept.json";
const SNAPSHOT = "sync/changes-snapshot.json";
/** A cursor further behind than this many entries gets a scan instead (cheaper than reading them all). */
const MAX_ENTRIES_READ = 4096;
/** The id of "before the first entry". */
const NO_ID = "0".repeat(16);

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A position in the log: the last entry a client has seen (number and id), or `n: 0` before the first. */
export interface LogPosition {
  readonly n: number;
  readonly id: string;
}

/** What a pull cursor says: a log position (version 2), or the sessions and tombstones seen (version 1, still read). */
export type Cursor = { readonly kind: "log"; readonly at: LogPosition } | {
  readonly kind: "seen";
  readonly s: Record<string, string>;
  readonly t: string[];
};

/** The entries after a position, or `undefined` when the log cannot say (rewritten, pruned, too far behind): scan instead. */
export interface LogRead {
  readonly refs: ReadonlySet<string>;
  readonly at: LogPosition;
}

/** The store-wide change log of one store. */
export class ChangeLog {
  readonly #storage: StoragePort;
  /** The last entry this instance wrote: where the next probably goes (checked against the store). */
  #last: number | undefined;

  constructor(storage: StoragePort) {
    this.#storage = storage;
  }

  /**
   * Appends an entry naming `refs`, at the number after the last. Not flushed to disk: an
   * entry a machine crash loses leaves a gap, which readers detect (a scan), or was the last,
   * whose change the sweep finds.
   */
  async record(refs: readonly string[]): Promise<void> {
    // The number after the last this instance wrote, when that entry is still there; else the log's head.
    let seq = (this.#last !== undefined && (await this.#entry(this.#last)) ? this.#last : (await this.head()).n) + 1;
    const id = randomId();
    const entryOf = (n: number) => encodeJsonDocument({ seq: n, id, refs } satisfies ChangeEntry);
    while (!(await this.#storage.createExclusive(entryPath(seq), entryOf(seq), { durable: false }))) seq = Math.max(seq, (await this.head()).n) + 1;
    this.#last = seq;
    // Opening a page drops the oldest kept one: a cursor that far behind is answered with a scan.
    if (seq % PAGE === 0 && seq / PAGE >= KEPT_PAGES) {
      await this.#storage.remove(`${DIR}/${pageName(seq / PAGE - KEPT_PAGES)}`);
    }
  }

  /** The last entry's position (`n: 0` for an empty log): the newest page, listed. */
  async head(): Promise<LogPosition> {
    const pages = (await this.#storage.list(DIR)).filter((name) => /^\d{10}$/.test(name));
    for (const page of pages.reverse()) {
      const names = (await this.#storage.list(`${DIR}/${page}`)).filter((name) => /^\d{16}\.json$/.test(name));
      const last = names.at(-1);
      if (!last) continue;
      const entry = await this.#entry(Number(last.slice(0, 16)));
      if (entry) return { n: entry.seq, id: entry.id };
    }
    return { n: 0, id: NO_ID };
  }

  /**
   * The refs named after `from`, and the position of the last entry read; `undefined` when
   * `from` is not in this log any more (a restored or rewritten store, pruned pages) or is
   * too far behind: the caller scans instead.
   */
  async since(from: LogPosition): Promise<LogRead | undefined> {
    if (from.n > 0) {
      const entry = await this.#entry(from.n);
      if (entry?.id !== from.id) return undefined;
    }
    const refs = new Set<string>();
    let at = from;
    for (let seq = from.n + 1;; seq++) {
      let entry = await this.#entry(seq);
      // The first missing number must be the end. With entries after it, it is one written
      // since (read again) or a gap (an entry a crash lost, a pruned first page): then the log cannot say.
      if (!entry && (await this.head()).n > at.n && !(entry = await this.#entry(seq))) return undefined;
      if (!entry) break;
      if (seq - from.n > MAX_ENTRIES_READ) return undefined;
      for (const ref of entry.refs) refs.add(ref);
      at = { n: entry.seq, id: entry.id };
    }
    return { refs, at };
  }

  /**
   * Logs the sessions whose place or revision differs from the last sweep's (new, changed,
   * gone), when the last sweep is at least `intervalMs` old. `current` lists every session's
   * `place:revision` by ref. Two servers sweeping at once log some refs twice, which a pull
   * reads as one.
   */
  async sweepIfDue(now: number, intervalMs: number, current: () => Promise<Record<string, string>>): Promise<void> {
    const swept = await this.#storage.read(SWEPT);
    if (swept && now - (JSON.parse(decoder.decode(swept)) as { at: number }).at < intervalMs) return;
    const before = await this.#storage.read(SNAPSHOT);
    const last = before ? (JSON.parse(decoder.decode(before)) as Record<string, string>) : {};
    const keys = await current();
    const changed = new Set<string>();
    for (const [ref, key] of Object.entries(keys)) if (last[ref] !== key) changed.add(ref);
    for (const ref of Object.keys(last)) if (!(ref in keys)) changed.add(ref);
    if (changed.size > 0) await this.record([...changed]);
    await this.#storage.replace(SNAPSHOT, encodeJsonDocument(keys), { durable: false });
    await this.#storage.replace(SWEPT, encodeJsonDocument({ at: now }), { durable: false });
  }

  async #entry(seq: number): Promise<ChangeEntry | undefined> {
    const bytes = await this.#storage.read(entryPath(seq));
    return bytes && (JSON.parse(decoder.decode(bytes)) as ChangeEntry);
  }
}

/**
 * A cursor as the client carries it: version 2 is `{"v":2,"n":"<16 digits>","i":"<16 hex>"}`
 * in base64, the same length whatever the position.
 */
export function encodeCursor(at: LogPosition): string {
  return base64(JSON.stringify({ v: 2, n: String(at.n).padStart(16, "0"), i: at.id }));
}

/**
 * Reads a cursor: version 2 (a log position) or version 1 (`{s, t}`: the sessions at their
 * revisions and the tombstones seen, which a server of this version still answers, by a scan).
 *
 * @throws {SyncRefusedError} `malformed` (400) for anything else.
 */
export function decodeCursor(cursor: string): Cursor {
  try {
    const state = JSON.parse(decoder.decode(Uint8Array.from(atob(cursor), (c) => c.charCodeAt(0)))) as Record<string, unknown>;
    if (state.v === 2 && typeof state.n === "string" && /^\d{16}$/.test(state.n) && typeof state.i === "string" && /^[0-9a-f]{16}$/.test(state.i)) {
      return { kind: "log", at: { n: Number(state.n), id: state.i } };
    }
    if (typeof state.s === "object" && state.s !== null && Array.isArray(state.t)) {
      return { kind: "seen", s: state.s as Record<string, string>, t: state.t as string[] };
    }
  } catch {
    // Refused below.
  }
  throw refused("malformed", 400, "pull: cursor is not one this server gave", {});
}

function pageName(page: number): string {
  return String(page).padStart(10, "0");
}

function entryPath(seq: number): string {
  return `${DIR}/${pageName(Math.floor(seq / PAGE))}/${String(seq).padStart(16, "0")}.json`;
}

function randomId(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0")).join("");
}

function base64(text: string): string {
  return btoa(String.fromCharCode(...encoder.encode(text)));
}
