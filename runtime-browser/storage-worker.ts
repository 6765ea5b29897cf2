/**
 * The module Web Worker of {@linkcode WorkerIndexedDbStorage}: one
 * {@linkcode IndexedDbStorage}, opened with the options the page sends first, served over
 * Comlink's message protocol by the core's storage worker API (`serveComlinkCalls`, which
 * answers as `Comlink.expose` would; commit plans included). Web Locks taken through it are
 * held by this worker, so they die with it (and with the tab that owns it).
 *
 * Start it as `new Worker(new URL("./storage-worker.ts", import.meta.url), { type: "module" })`.
 *
 * @module
 */
import * as Comlink from "comlink";
import { serveComlinkCalls, storageWorkerApi } from "../core/internal.ts";
import { IndexedDbStorage, type IndexedDbStorageOptions } from "./indexeddb-storage.ts";

serveComlinkCalls(Comlink, globalThis, (comlink) => storageWorkerApi(comlink, (options: IndexedDbStorageOptions) => new IndexedDbStorage(options)));
