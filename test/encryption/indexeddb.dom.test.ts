/** The encrypted-store attack suite on IndexedDB (fake-indexeddb): the no-plaintext check reads every stored value. */
import { IndexedDbStorage } from "../../runtime-browser/indexeddb-storage.ts";
import { runEncryptionAttackTests } from "../../testing/encryption-attacks.ts";

let next = 0;

function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/** The bytes of every string, byte array and buffer inside a stored value. */
function bytesOf(value: unknown, out: Uint8Array[]): void {
  if (typeof value === "string") out.push(new TextEncoder().encode(value));
  else if (value instanceof Uint8Array) out.push(value);
  else if (value instanceof ArrayBuffer) out.push(new Uint8Array(value));
  else if (ArrayBuffer.isView(value)) out.push(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
  else if (value instanceof Blob) throw new Error("a Blob value: read it with FileReader");
  else if (typeof value === "object" && value !== null) { for (const inner of Object.values(value)) bytesOf(inner, out); }
}

/** Every key and value of the database's object store, as stored. */
async function everyValue(dbName: string, storeName: string): Promise<Uint8Array> {
  const db = await request(indexedDB.open(dbName));
  try {
    const store = db.transaction(storeName, "readonly").objectStore(storeName);
    const [keys, values] = await Promise.all([request(store.getAllKeys()), request(store.getAll())]);
    const chunks: Uint8Array[] = [];
    bytesOf(keys, chunks);
    bytesOf(values, chunks);
    return Buffer.concat(chunks);
  } finally {
    db.close();
  }
}

runEncryptionAttackTests("IndexedDbStorage (fake-indexeddb)", async () => {
  const dbName = `encryption-${Date.now()}-${next++}`;
  const storage = new IndexedDbStorage({ dbName });
  return {
    storage,
    dump: () => everyValue(dbName, storage.storeName),
    teardown: async () => {
      await storage.close();
      await request(indexedDB.deleteDatabase(dbName));
    },
  };
});
