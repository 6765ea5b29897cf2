import { formatSegmentName } from "../layout/segments.ts";
import type { FileTail, LastFileRequest, ReadRequest, ReadResult, StoragePort } from "./port.ts";

/**
 * Reads `requests` with the backend's {@linkcode StoragePort.readMany} when it offers one
 * (one state of the store, one round trip); otherwise the first request alone and then the
 * others at once, so that none of the others sees an older state than the first (what a
 * reader of `meta.json` before the lines needs, docs/FORMAT.md "Revisions"). Without
 * `readMany`, a `lastIn` request (a prefetch) is not read: its answer is `null`.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * const storage = new MemoryStorage();
 * await storage.replace("a/meta.json", new TextEncoder().encode("{}"));
 * const [meta, lines] = await readMany(storage, [{ path: "a/meta.json" }, { path: "a/lines.jsonl", tailBytes: 4096 }]);
 * meta?.size; // 2
 * lines; // undefined
 * ```
 */
export function readMany(storage: StoragePort, requests: readonly ReadRequest[]): Promise<(ReadResult | null | undefined)[]> {
  return storage.readMany ? storage.readMany(requests) : readManyByCalls(storage, requests);
}

/**
 * {@linkcode StoragePort.readMany} over the port's other calls: the first request alone, then
 * the others at once, so that none of them sees an older state than the first; a `lastIn`
 * prefetch reads the file its `namedIn` hint names ({@linkcode hintedFile}, from the first
 * request's answer), else is answered `null` (not read: a listing grows with the folder).
 * What a backend behind a hop (a worker) answers with when its store has no `readMany` of its
 * own: the calls then cost no round trip each.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * const storage = new MemoryStorage();
 * await storage.replace("s/meta.json", new TextEncoder().encode("{}"));
 * const [meta, last] = await readManyByCalls(storage, [{ path: "s/meta.json" }, { lastIn: "s/segments", tailBytes: 4 }]);
 * meta?.size; // 2
 * last; // null
 * ```
 */
export async function readManyByCalls(storage: StoragePort, requests: readonly ReadRequest[]): Promise<(ReadResult | null | undefined)[]> {
  const readOne = async (path: string, tailBytes: number | undefined): Promise<ReadResult | undefined> => {
    if (tailBytes !== undefined) {
      const tail = await storage.readTail(path, tailBytes);
      return tail && { path, bytes: tail.bytes, size: tail.size };
    }
    const bytes = await storage.read(path);
    return bytes && { path, bytes, size: bytes.length };
  };
  const [first, ...rest] = requests;
  if (!first) return [];
  // Only the first answer is known before the others are read: a hint may name only it.
  const head = "lastIn" in first ? null : await readOne(first.path, first.tailBytes);
  return [
    head,
    ...(await Promise.all(rest.map(async (request) => {
      if (!("lastIn" in request)) return readOne(request.path, request.tailBytes);
      const hinted = hintedFile([first], [head], request);
      return hinted === undefined ? null : (await readOne(hinted, request.tailBytes)) ?? null;
    }))),
  ];
}

const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The file a `lastIn` request's `namedIn` hint names ({@linkcode LastFileRequest}), read from
 * `found`, the answers to the requests `earlier` in the same call: the segment named by the range
 * `{"start", "end"}` in the hint's field of the JSON object that an earlier request read
 * whole, in the request's folder. `undefined` when the request has no hint, no earlier request
 * read that file whole, it is missing or not a JSON object, or the field holds no valid range.
 * The name is built from the range's two numbers alone, so it never leaves the folder. What a
 * backend that cannot find a folder's last file in constant time reads for the prefetch.
 *
 * @example
 * ```ts
 * const bytes = new TextEncoder().encode('{"newest_segment":{"start":1,"end":450}}');
 * const meta = { path: "s/meta.json", bytes, size: bytes.length };
 * const request = { lastIn: "s/segments", tailBytes: 4096, namedIn: { path: "s/meta.json", field: "newest_segment" } };
 * hintedFile([{ path: "s/meta.json" }], [meta], request); // "s/segments/000000000001-000000000450.jsonl"
 * ```
 */
export function hintedFile(earlier: readonly ReadRequest[], found: readonly (ReadResult | null | undefined)[], request: LastFileRequest): string | undefined {
  const hint = request.namedIn;
  if (!hint || typeof hint.path !== "string" || typeof hint.field !== "string") return undefined;
  const at = earlier.findIndex((r) => "path" in r && r.path === hint.path && r.tailBytes === undefined);
  const bytes = at < 0 ? undefined : found[at]?.bytes;
  if (!bytes) return undefined;
  let range: unknown;
  try {
    const document: unknown = JSON.parse(STRICT_UTF8.decode(bytes));
    if (typeof document !== "object" || document === null || !Object.hasOwn(document, hint.field)) return undefined;
    range = (document as Record<string, unknown>)[hint.field];
  } catch {
    return undefined;
  }
  if (typeof range !== "object" || range === null) return undefined;
  const { start, end } = range as { start?: unknown; end?: unknown };
  if (typeof start !== "number" || typeof end !== "number") return undefined;
  let name: string;
  try {
    name = formatSegmentName({ start, end });
  } catch {
    return undefined; // not 1 <= start <= end < 10^12 in whole numbers
  }
  return request.lastIn === "" ? name : `${request.lastIn}/${name}`;
}

/**
 * `storage`'s `readTail`, answered from `found` (an earlier {@linkcode readMany}'s result)
 * when it is the file asked for and holds enough of its tail; any other read goes to `storage`.
 */
export function withPrefetchedTail(storage: Pick<StoragePort, "readTail">, found: ReadResult | null | undefined): Pick<StoragePort, "readTail"> {
  return {
    readTail: async (path: string, maxBytes: number): Promise<FileTail | undefined> => {
      const wanted = Math.max(0, Math.floor(maxBytes));
      if (!found || found.path !== path || (found.bytes.length < wanted && found.bytes.length < found.size)) return storage.readTail(path, maxBytes);
      return { bytes: found.bytes.subarray(Math.max(0, found.bytes.length - wanted)), size: found.size };
    },
  };
}
