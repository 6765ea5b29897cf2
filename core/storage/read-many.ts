import type { FileTail, ReadRequest, ReadResult, StoragePort } from "./port.ts";

/**
 * Reads `requests` with the backend's {@linkcode StoragePort.readMany} when it offers one
 * (one state of the store, one round trip); otherwise the first request alone and then the
 * others at once, so that none of the others sees an older state than the first (what a
 * reader of `meta.json` before the lines needs, docs/FORMAT.md "Revisions"). Without
 * `readMany`, a `lastIn` request (a prefetch) is not read: its answer is `undefined`.
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
export async function readMany(storage: StoragePort, requests: readonly ReadRequest[]): Promise<(ReadResult | undefined)[]> {
  if (storage.readMany) return storage.readMany(requests);
  const readOne = async (request: ReadRequest): Promise<ReadResult | undefined> => {
    if ("lastIn" in request) return undefined;
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
export function withPrefetchedTail(storage: Pick<StoragePort, "readTail">, found: ReadResult | undefined): Pick<StoragePort, "readTail"> {
  return {
    readTail: async (path: string, maxBytes: number): Promise<FileTail | undefined> => {
      const wanted = Math.max(0, Math.floor(maxBytes));
      if (!found || found.path !== path || (found.bytes.length < wanted && found.bytes.length < found.size)) return storage.readTail(path, maxBytes);
      return { bytes: found.bytes.subarray(Math.max(0, found.bytes.length - wanted)), size: found.size };
    },
  };
}
