/**
 * The text of a catalog snapshot as IndexedDB keeps it (docs/FORMAT.md "The catalog"): its
 * entries by columns, each list of a document's field names written once for every entry
 * that has the same. A snapshot of 10⁴ sessions is half the text of the same entries as an
 * array of objects, and a listing reads it, carries it across the storage worker's hop and
 * parses it whole (docs/decisions.md "`list.indexeddb.n=1e4`: the snapshot by columns").
 * The array of entries that earlier versions wrote is read as well.
 *
 * @module
 */
import { StorageError } from "../errors.ts";
import type { CatalogEntry } from "./catalog.ts";

/**
 * A snapshot by columns: `shapes` holds each distinct list of field names (in the
 * document's order), and each row is `[name]` (an entry without a document),
 * `[name, shape, ...values]` (a document: its values in its shape's order) or
 * `[name, -1, value]` (a document that is not a JSON object, kept as it is).
 */
interface ColumnsSnapshot {
  readonly layout: "columns";
  readonly shapes: readonly (readonly string[])[];
  readonly rows: readonly (readonly unknown[])[];
}

/** The row's shape of a document that is not a JSON object. */
const NOT_AN_OBJECT = -1;

/**
 * The snapshot text of `entries`, in their order.
 *
 * @example
 * ```ts
 * const text = catalogSnapshotText([{ name: "s1", meta: { session_id: "s1", title: "one" } }, { name: "s2", meta: undefined }]);
 * text; // '{"layout":"columns","shapes":[["session_id","title"]],"rows":[["s1",0,"s1","one"],["s2"]]}'
 * ```
 */
export function catalogSnapshotText(entries: readonly CatalogEntry[]): string {
  const shapes: string[][] = [];
  const shapeOf = new Map<string, number>();
  const rows: unknown[][] = [];
  let last: { readonly keys: readonly string[]; readonly index: number } | undefined;
  for (const { name, meta } of entries) {
    if (meta === undefined) {
      rows.push([name]);
      continue;
    }
    if (meta === null || typeof meta !== "object" || Array.isArray(meta)) {
      rows.push([name, NOT_AN_OBJECT, meta]);
      continue;
    }
    const document = meta as Record<string, unknown>;
    const keys = Object.keys(document);
    // Entries mostly share one list of fields: compare with the last before looking it up.
    if (!last || !sameKeys(last.keys, keys)) {
      const id = JSON.stringify(keys);
      let index = shapeOf.get(id);
      if (index === undefined) {
        index = shapes.push(keys) - 1;
        shapeOf.set(id, index);
      }
      last = { keys, index };
    }
    const row: unknown[] = [name, last.index];
    for (const key of keys) row.push(document[key]);
    rows.push(row);
  }
  const snapshot: ColumnsSnapshot = { layout: "columns", shapes, rows };
  return JSON.stringify(snapshot);
}

/**
 * The entries of a snapshot's text, by columns or as an array of entries (earlier versions),
 * in their order; `undefined` when the text is neither (a damaged snapshot).
 *
 * @example
 * ```ts
 * const entries = [{ name: "s1", meta: { session_id: "s1", title: "one" } }];
 * catalogSnapshotEntries(catalogSnapshotText(entries)); // [{ name: "s1", meta: { session_id: "s1", title: "one" } }]
 * catalogSnapshotEntries(JSON.stringify(entries)); // the same
 * catalogSnapshotEntries("{not json"); // undefined
 * ```
 */
export function catalogSnapshotEntries(text: string): CatalogEntry[] | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (Array.isArray(value)) return value as CatalogEntry[];
  const snapshot = value as Partial<ColumnsSnapshot> | null;
  if (snapshot?.layout !== "columns" || !Array.isArray(snapshot.shapes) || !Array.isArray(snapshot.rows)) return undefined;
  const { shapes, rows } = snapshot;
  if (!shapes.every((keys) => Array.isArray(keys) && keys.every((key) => typeof key === "string"))) return undefined;
  const entries: CatalogEntry[] = new Array(rows.length);
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r];
    if (!Array.isArray(row) || typeof row[0] !== "string") return undefined;
    const entry = entryOfRow(row, shapes);
    if (!entry) return undefined;
    entries[r] = entry;
  }
  return entries;
}

/** The entry of one row, `undefined` when the row does not match its shape. */
function entryOfRow(row: readonly unknown[], shapes: readonly (readonly string[])[]): CatalogEntry | undefined {
  const name = row[0] as string;
  if (row.length === 1) return { name, meta: undefined };
  if (row[1] === NOT_AN_OBJECT) return row.length === 3 ? { name, meta: row[2] } : undefined;
  const keys = typeof row[1] === "number" ? shapes[row[1]] : undefined;
  if (!keys || row.length !== keys.length + 2) return undefined;
  const meta: Record<string, unknown> = {};
  for (let k = 0; k < keys.length; k++) {
    const key = keys[k]!;
    // As JSON.parse makes it: an own field, even one named `__proto__`.
    if (key === "__proto__") Object.defineProperty(meta, key, { value: row[k + 2], enumerable: true, writable: true, configurable: true });
    else meta[key] = row[k + 2];
  }
  return { name, meta };
}

/**
 * The error of a snapshot text that {@linkcode catalogSnapshotEntries} does not take, as
 * `subject` (which snapshot, where) names it: the core then lists from every `meta.json`.
 *
 * @example
 * ```ts
 * damagedSnapshotError('catalog of "agents/a1/workspaces/w1/sessions"', "agents/a1/workspaces/w1/sessions").message;
 * // 'catalog of "agents/a1/workspaces/w1/sessions" is not a snapshot of entries (by columns, or a JSON array); rebuild the catalog'
 * ```
 */
export function damagedSnapshotError(subject: string, dir: string): StorageError {
  return new StorageError(`${subject} is not a snapshot of entries (by columns, or a JSON array); rebuild the catalog`, { path: dir });
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
