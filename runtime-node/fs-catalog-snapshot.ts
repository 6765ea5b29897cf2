/**
 * The lines of a Node file store's catalog and its sorted snapshot (docs/FORMAT.md "The
 * catalog"): a line is `{"name", "meta"}`; a snapshot of catalog version 2 starts with the
 * line {@linkcode SNAPSHOT_HEADER} and holds its sessions in the listing's order (entries
 * without an `updated_at` first, then `updated_at` newest first, then by name), so a page of
 * a listing reads its first lines, or finds a cursor's place by bisection, never the whole
 * file. Writing one merges the lines set aside into the sorted lines it had, copying those
 * it keeps as they are.
 *
 * @module
 */
import { Buffer, isAscii } from "node:buffer";
import { readSync } from "node:fs";
import { type CatalogEntry, type CatalogPage, isListedName } from "../core/reader.ts";

/** The first line of a sorted snapshot (catalog version 2); a snapshot without it is read whole. */
export const SNAPSHOT_HEADER = '{"catalog":2,"order":"updated_at desc, name"}';

/** The first read of a page: a few dozen lines. Later reads double, up to {@linkcode MAX_STEP}. */
const FIRST_STEP = 16 * 1024;
const MAX_STEP = 1024 * 1024;
/** A bisection stops once the span left is this small, and reads it line by line. */
const BISECT_STOP = 8 * 1024;
const NEWLINE = 0x0a;
const NAME_PREFIX = '{"name":"';

const decoder = new TextDecoder();
const bomKeepingDecoder = new TextDecoder("utf-8", { ignoreBOM: true });
const encoder = new TextEncoder();
const NEWLINE_BYTES = Uint8Array.of(NEWLINE);

/** One entry with its place in the order: `at` is the `updated_at` it sorts by, `undefined` when it has none. */
export interface SortedEntry extends CatalogEntry {
  readonly at: string | undefined;
}

/** The `updated_at` an entry sorts by; `undefined` when its document has none (the listing then reads its meta.json). */
function orderKey(meta: unknown): string | undefined {
  const at = (meta as { updated_at?: unknown } | null | undefined)?.updated_at;
  return typeof at === "string" ? at : undefined;
}

/** The snapshot's order: entries without a key first (by name), then newest `updated_at` first, then by name (code units). */
function compareEntries(a: SortedEntry, b: SortedEntry): number {
  if (a.at !== b.at) {
    if (a.at === undefined) return -1;
    if (b.at === undefined) return 1;
    return a.at > b.at ? -1 : 1;
  }
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** Whether an entry with a key comes after the page's cursor (`CatalogPage.after`) in the listing's order. */
function isAfter(entry: SortedEntry, after: CatalogPage["after"]): boolean {
  if (!after || entry.at === undefined) return true;
  return entry.at < after.updatedAt || (entry.at === after.updatedAt && entry.name > after.name);
}

/** A catalog line as an entry; `undefined` for a line that is not one (a torn tail, the header, a foreign line). */
export function parseLine(text: string): SortedEntry | undefined {
  try {
    const line = JSON.parse(text) as { name?: unknown; meta?: unknown } | null;
    if (typeof line?.name !== "string") return undefined;
    return { name: line.name, meta: line.meta ?? undefined, at: orderKey(line.meta) };
  } catch {
    return undefined;
  }
}

/**
 * Applies a catalog file's lines to `latest` (name → meta), in order; a line that is not one
 * (a torn tail, the header) is skipped. `atFileStart`: whether `bytes` start the file (where a
 * BOM is dropped, as decoding the whole file drops it).
 *
 * The lines are exactly those of decoding the bytes whole as UTF-8 (a bad sequence replaced)
 * and splitting at each newline. UTF-8 decoding was a large part of reading a catalog whole
 * (docs/decisions.md "Listing 10⁴ sessions on files"), and ASCII bytes read the same as
 * Latin-1: bytes of ASCII only are taken so at once and their lines applied in place, not cut
 * out one string each; any others line by line, decoding only the lines that are not ASCII.
 */
export function applyLines(bytes: Uint8Array, latest: Map<string, unknown>, atFileStart = true): void {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  if (isAscii(buffer)) {
    const text = buffer.toString("latin1");
    for (let start = 0; start <= text.length;) {
      const newline = text.indexOf("\n", start);
      const end = newline === -1 ? text.length : newline;
      applyLine(text, start, end, latest);
      start = end + 1;
    }
    return;
  }
  for (let start = 0; start <= buffer.length;) {
    const newline = buffer.indexOf(NEWLINE, start);
    const end = newline === -1 ? buffer.length : newline;
    const line = buffer.subarray(start, end);
    // A newline is never part of a UTF-8 sequence, so each line decodes as it would in the
    // whole file; only the file's start may hold the BOM a whole decoding drops.
    const text = isAscii(line) ? line.toString("latin1") : (atFileStart && start === 0 ? decoder : bomKeepingDecoder).decode(line);
    applyLine(text, 0, text.length, latest);
    start = end + 1;
  }
}

/** Applies the line `text[start, end)` to `latest`; one that is not a catalog line (a torn or foreign line, the header) is skipped. */
function applyLine(text: string, start: number, end: number, latest: Map<string, unknown>): void {
  if (end === start || applyWrittenLine(text, start, end, latest)) return;
  try {
    const line = JSON.parse(text.slice(start, end)) as { name?: unknown; meta?: unknown } | null;
    if (typeof line?.name === "string") latest.set(line.name, line.meta);
  } catch {
    // A torn or foreign line: the sessions it named are read from their meta.json.
  }
}

const META_KEY = '","meta":';

/**
 * Applies the line `text[start, end)` when it is as this store writes it,
 * `{"name":"<listed name>","meta":<document>}`, parsing its document alone: a listed name
 * needs no escape, so the line is that object exactly when the document parses, and a
 * listing of 10⁴ sessions is spared 10⁴ objects (docs/decisions.md "Listing 10⁴ sessions on
 * files"). `false` for any other line: parse it whole.
 */
function applyWrittenLine(text: string, start: number, end: number, latest: Map<string, unknown>): boolean {
  if (!text.startsWith(NAME_PREFIX, start) || text.charCodeAt(end - 1) !== 0x7d) return false; // "}"
  const close = text.indexOf('"', start + NAME_PREFIX.length);
  if (close === -1 || close >= end || !text.startsWith(META_KEY, close)) return false;
  const name = text.slice(start + NAME_PREFIX.length, close);
  if (!isListedName(name)) return false;
  let meta: unknown;
  try {
    meta = JSON.parse(text.slice(close + META_KEY.length, end - 1));
  } catch {
    return false;
  }
  latest.set(name, meta);
  return true;
}

/** The steps {@linkcode applyFileLines} reads in (a line longer than this is read into a buffer of its own). */
export const FILE_STEP = 64 * 1024;
/** Read into by {@linkcode applyFileLines} only, which is synchronous: never shared. */
const fileStepBuffer = Buffer.allocUnsafeSlow(FILE_STEP);

/**
 * {@linkcode applyLines} of the whole file open at `fd`, bytes appended since it was opened
 * included, read in steps of whole lines through one buffer kept for it: a catalog read whole
 * is never held whole, neither as bytes nor as text (a 3 MB buffer and a 3 MB string fresh
 * at each listing cost more than the reads, docs/decisions.md "Listing 10⁴ sessions on files").
 *
 * @throws what `tooLarge` makes once more than `max` bytes were read.
 */
export function applyFileLines(fd: number, latest: Map<string, unknown>, max: number, tooLarge: (bytes: number) => Error): void {
  let buffer = fileStepBuffer;
  let filled = 0;
  let position = 0;
  for (;;) {
    if (filled === buffer.length) buffer = Buffer.concat([buffer], buffer.length * 2);
    const read = readSync(fd, buffer, filled, buffer.length - filled, position);
    position += read;
    if (position > max) throw tooLarge(position);
    filled += read;
    // Whole lines only, but the file's last line, with its newline or without (a torn tail).
    const end = read === 0 ? filled : buffer.lastIndexOf(NEWLINE, filled - 1) + 1;
    if (end > 0) {
      applyLines(buffer.subarray(0, end), latest, position - filled === 0);
      buffer.copy(buffer, 0, end, filled);
      filled -= end;
    }
    if (read === 0) return;
  }
}

/**
 * Every name a catalog file's lines are for. A line as this store writes it is read no
 * further than its name, and not decoded as a whole (a snapshot of 10⁵ sessions is 30 MB).
 */
export function lineNames(bytes: Uint8Array): Set<string> {
  const names = new Set<string>();
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  for (let start = 0; start < buffer.length;) {
    const newline = buffer.indexOf(NEWLINE, start);
    const end = newline === -1 ? buffer.length : newline;
    const name = end > start ? nameOf(buffer, start, end, newline !== -1) : undefined;
    if (name !== undefined) names.add(name);
    start = end + 1;
  }
  return names;
}

const NAME_PREFIX_BYTES = Buffer.from(NAME_PREFIX);

/** The name of the line `buffer[start, end)`; a last line without its newline (a torn tail) only if it parses whole. */
function nameOf(buffer: Buffer, start: number, end: number, ended: boolean): string | undefined {
  return (ended ? writtenName(buffer, start, end) : undefined) ?? parseLine(buffer.toString("utf8", start, end))?.name;
}

/** The name of the line `buffer[start, end)` read from its bytes when it is as this store writes it (`{"name":"<listed name>",…}`: a listed name needs no escape), else `undefined`: parse the line. */
function writtenName(buffer: Buffer, start: number, end: number): string | undefined {
  const from = start + NAME_PREFIX_BYTES.length;
  if (end <= from || buffer[end - 1] !== 0x7d || buffer.compare(NAME_PREFIX_BYTES, 0, NAME_PREFIX_BYTES.length, start, from) !== 0) return undefined; // "}"
  const close = buffer.indexOf(0x22, from); // '"'
  if (close === -1 || close >= end || buffer[close + 1] !== 0x2c) return undefined; // ","
  const name = buffer.toString("latin1", from, close);
  return isListedName(name) ? name : undefined;
}

/** The line of one entry, newline included. */
const lineOf = (entry: CatalogEntry): string => `${JSON.stringify({ name: entry.name, meta: entry.meta ?? null })}\n`;

/** A sorted snapshot from every entry: the header, then the entries in the snapshot's order. */
export function snapshotBytes(latest: ReadonlyMap<string, unknown>): Uint8Array {
  const entries = [...latest].map(([name, meta]): SortedEntry => ({ name, meta, at: orderKey(meta) })).sort(compareEntries);
  return encoder.encode(`${SNAPSHOT_HEADER}\n${entries.map(lineOf).join("")}`);
}

/**
 * The snapshot a compaction writes: the lines of `snapshot` (the bytes of the one it had)
 * whose session's folder is `present` and that no line set aside replaces, merged in order
 * with the lines set aside (`updates`) of present sessions. A sorted snapshot's lines are
 * copied as they are, byte for byte (only those compared with an update are parsed); one
 * without the header (catalog version 1) is parsed whole and sorted.
 */
export function mergedSnapshot(snapshot: Uint8Array | undefined, updates: ReadonlyMap<string, unknown>, present: ReadonlySet<string>): Uint8Array {
  const buffer = snapshot ? Buffer.from(snapshot.buffer, snapshot.byteOffset, snapshot.length) : Buffer.alloc(0);
  const headerEnd = buffer.indexOf(NEWLINE);
  if (headerEnd === -1 || buffer.toString("utf8", 0, headerEnd) !== SNAPSHOT_HEADER) {
    const latest = new Map<string, unknown>();
    applyLines(buffer, latest);
    for (const [name, meta] of updates) latest.set(name, meta);
    for (const name of [...latest.keys()]) if (!present.has(name)) latest.delete(name);
    return snapshotBytes(latest);
  }
  const fresh = [...updates].filter(([name]) => present.has(name)).map(([name, meta]): SortedEntry => ({ name, meta, at: orderKey(meta) }));
  fresh.sort(compareEntries);
  const out: Uint8Array[] = [buffer.subarray(0, headerEnd + 1)];
  const kept = new Set<string>();
  let next = 0;
  for (let start = headerEnd + 1; start < buffer.length;) {
    const newline = buffer.indexOf(NEWLINE, start);
    const end = newline === -1 ? buffer.length : newline;
    const name = end > start ? nameOf(buffer, start, end, newline !== -1) : undefined;
    if (name !== undefined && !updates.has(name) && present.has(name) && !kept.has(name)) {
      kept.add(name);
      if (next < fresh.length) {
        const entry = parseLine(buffer.toString("utf8", start, end));
        while (entry && next < fresh.length && compareEntries(fresh[next]!, entry) < 0) out.push(encoder.encode(lineOf(fresh[next++]!)));
      }
      out.push(newline === -1 ? Buffer.concat([buffer.subarray(start, end), NEWLINE_BYTES]) : buffer.subarray(start, end + 1));
    }
    start = end + 1;
  }
  while (next < fresh.length) out.push(encoder.encode(lineOf(fresh[next++]!)));
  return Buffer.concat(out);
}

/** One line of an open file: its text and where its bytes start and end (after its newline). */
interface Line {
  readonly text: string;
  readonly start: number;
  readonly end: number;
}

/** A sorted snapshot, open: pages are read from it by position, never the whole file. */
export class SortedSnapshot {
  readonly #fd: number;
  readonly #size: number;
  readonly #bodyStart: number;

  private constructor(fd: number, size: number, bodyStart: number) {
    this.#fd = fd;
    this.#size = size;
    this.#bodyStart = bodyStart;
  }

  /** The snapshot open at `fd` (`size` bytes) when it is sorted (starts with the header); `undefined` otherwise (read it whole). */
  static of(fd: number, size: number): SortedSnapshot | undefined {
    const first = linesFrom(fd, size, 0, SNAPSHOT_HEADER.length + 1).next();
    if (first.done || first.value.text !== SNAPSHOT_HEADER) return undefined;
    return new SortedSnapshot(fd, size, first.value.end);
  }

  /**
   * The entries a page needs: every entry without a key, then the first `page.limit` entries
   * after `page.after` that `usable` takes (its session's folder is there, and no newer line
   * replaces it), in the snapshot's order.
   */
  page(page: CatalogPage, usable: (name: string) => boolean): SortedEntry[] {
    const found: SortedEntry[] = [];
    for (const line of linesFrom(this.#fd, this.#size, this.#bodyStart)) {
      const entry = parseLine(line.text);
      if (!entry) continue;
      if (entry.at === undefined) {
        if (usable(entry.name)) found.push(entry);
        continue;
      }
      found.push(...this.#keyedFrom(page.after ? this.#firstAfter(line.start, page.after) : line.start, page, usable));
      break;
    }
    return found;
  }

  /** The first `page.limit` entries with a key after `page.after` that `usable` takes, reading from `from` (a line's start). */
  #keyedFrom(from: number, page: CatalogPage, usable: (name: string) => boolean): SortedEntry[] {
    const found: SortedEntry[] = [];
    for (const line of linesFrom(this.#fd, this.#size, from)) {
      if (found.length >= page.limit) break;
      const entry = parseLine(line.text);
      if (entry?.at !== undefined && isAfter(entry, page.after) && usable(entry.name)) found.push(entry);
    }
    return found;
  }

  /**
   * Where the first line after `after` may start, at or after `lo` (the first line with a
   * key): bisection over byte positions, each probe reading the first whole line at or after
   * the middle. A line that does not parse is stepped over.
   */
  #firstAfter(lo: number, after: NonNullable<CatalogPage["after"]>): number {
    let hi = this.#size;
    while (hi - lo > BISECT_STOP) {
      const mid = lo + Math.floor((hi - lo) / 2);
      let probe: { line: Line; entry: SortedEntry } | undefined;
      for (const line of linesFrom(this.#fd, hi, mid - 1, 4096)) {
        if (line.start < mid) continue; // the tail of the line that holds `mid - 1`
        const entry = parseLine(line.text);
        if (entry?.at !== undefined) {
          probe = { line, entry };
          break;
        }
      }
      // No whole line with a key starts in [mid, hi): the span left is read line by line.
      if (!probe) break;
      if (isAfter(probe.entry, after)) hi = probe.line.start;
      else lo = probe.line.end;
    }
    return lo;
  }
}

/**
 * The lines of the open file `fd` that start at or after `from` (a line cut by `from` is
 * yielded from `from`: a caller that needs whole lines skips it) and before `size`, read in
 * steps that double from `step`. A last line without a newline is yielded as it is.
 */
function* linesFrom(fd: number, size: number, from: number, step = FIRST_STEP): Generator<Line> {
  let carry = new Uint8Array(0);
  let carryStart = from;
  let position = from;
  while (position < size) {
    const length = Math.min(step, size - position);
    const chunk = new Uint8Array(carry.length + length);
    chunk.set(carry);
    const read = readSync(fd, chunk, carry.length, length, position);
    if (read === 0) break;
    position += read;
    const filled = carry.length + read;
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE, start); end !== -1 && end < filled; end = chunk.indexOf(NEWLINE, start)) {
      yield { text: decoder.decode(chunk.subarray(start, end)), start: carryStart + start, end: carryStart + end + 1 };
      start = end + 1;
    }
    carry = chunk.slice(start, filled);
    carryStart += start;
    step = Math.min(step * 2, MAX_STEP);
  }
  if (carry.length > 0) yield { text: decoder.decode(carry), start: carryStart, end: carryStart + carry.length };
}
