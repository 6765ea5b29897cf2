import type { FileTail, ReadRequest, ReadResult, StoragePort } from "./port.ts";

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
 * prefetch is answered `null` (not read: a listing grows with the folder). What a backend
 * behind a hop (a worker) answers with when its store has no `readMany` of its own: the
 * calls then cost no round trip each.
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
  const readOne = async (request: ReadRequest): Promise<ReadResult | null | undefined> => {
    if ("lastIn" in request) return null;
    const { path, tailBytes } = request;
    if (tailBytes !== undefined) {
      const tail = await storage.readTail(path, tailBytes);
      return tail && { path, bytes: tail.bytes, size: tail.size };
    }
    const bytes = await storage.read(path);
    return bytes && { path, bytes, size: bytes.length };
  };
  const [first, ...rest] = requests;
  if (!first) return [];
  const head = await readOne(first);
  return [head, ...(await Promise.all(rest.map(readOne)))];
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
