/**
 * The connection of an `IndexedDbStorage`: opened through `idb-keyval`'s
 * custom store (`createStore(dbName, storeName)` creates the database and the object store),
 * reopened after another connection closed or upgraded it, and the one way to run a
 * transaction on it.
 *
 * @module
 */
import { createStore, type UseStore } from "idb-keyval";
import { StoreClosedError, type WriteOptions } from "../core/mod.ts";
import { indexedDbFailure, isQuotaError } from "./indexeddb-errors.ts";

/** One database's connection, opened on first use. */
export class IndexedDbConnection {
  readonly #dbName: string;
  readonly #storeName: string;
  #useStore: UseStore;
  #db: Promise<IDBDatabase> | undefined;
  #closed = false;

  constructor(dbName: string, storeName: string) {
    this.#dbName = dbName;
    this.#storeName = storeName;
    this.#useStore = createStore(dbName, storeName);
  }

  /**
   * Runs `body` in one transaction (`durability: "strict"` when writing, unless
   * `options.durable` is `false`) and resolves with its result once the transaction has
   * committed. When `body` throws, the transaction is aborted: nothing it did is kept.
   * Every failure rejects with a typed error naming `operation` and `path`.
   */
  async transaction<T>(
    mode: IDBTransactionMode,
    operation: string,
    path: string,
    body: (store: IDBObjectStore) => Promise<T> | T,
    options?: WriteOptions,
  ): Promise<T> {
    let tx: IDBTransaction;
    try {
      const db = await this.#database();
      const durability = options?.durable === false ? "relaxed" : "strict";
      tx = db.transaction(this.#storeName, mode, mode === "readwrite" ? { durability } : undefined);
    } catch (error) {
      throw indexedDbFailure(error, operation, path);
    }
    let aborted!: (reason: unknown) => void;
    const abort = new Promise<never>((_, reject) => (aborted = reject));
    const committed = new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onabort = () => {
        const reason = tx.error ?? new DOMException("the transaction was aborted", "AbortError");
        reject(reason);
        aborted(reason);
      };
    });
    committed.catch(() => undefined);
    abort.catch(() => undefined);
    let result: T;
    try {
      // An abort ends the body's wait too: a request it awaits may never settle.
      result = await Promise.race([body(tx.objectStore(this.#storeName)), abort]);
    } catch (error) {
      try {
        tx.abort();
      } catch {
        // Already aborted by the failed request, or finished.
      }
      const reason = await committed.then(() => undefined, (abort: unknown) => abort);
      // A quota failure may show up in the body only as a symptom; the transaction knows the cause.
      throw indexedDbFailure(isQuotaError(reason) ? reason : error, operation, path);
    }
    try {
      await committed;
    } catch (error) {
      throw indexedDbFailure(error, operation, path);
    }
    return result;
  }

  /** Closes the connection. Later transactions reject. */
  async close(): Promise<void> {
    this.#closed = true;
    const db = this.#db;
    this.#db = undefined;
    if (db) (await db.catch(() => undefined))?.close();
  }

  /** The open connection, taken from `idb-keyval`'s store so that it creates the database. */
  #database(): Promise<IDBDatabase> {
    if (this.#closed) {
      return Promise.reject(new StoreClosedError(`the store is closed (IndexedDbStorage "${this.#dbName}"); open it again to go on`, { db: this.#dbName }));
    }
    if (!this.#db) {
      const opening = this.#useStore("readonly", (store) => store.transaction.db);
      this.#db = opening;
      opening.then(
        (db) => {
          const forget = () => {
            if (this.#db === opening) {
              this.#db = undefined;
              // idb-keyval keeps its own handle to this connection: start over with a fresh store.
              this.#useStore = createStore(this.#dbName, this.#storeName);
            }
          };
          db.addEventListener("close", forget);
          // Another connection wants to upgrade or delete the database: step aside, reopen on next use.
          db.addEventListener("versionchange", () => {
            forget();
            db.close();
          });
        },
        () => {
          if (this.#db === opening) this.#db = undefined;
        },
      );
    }
    return this.#db;
  }
}
