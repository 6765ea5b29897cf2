/**
 * The worker thread of {@linkcode WorkerFileStorage}: one {@linkcode NodeFileStorage},
 * opened with the options the host sends first, served over Comlink's message protocol by
 * the core's storage worker API (`serveComlinkCalls`, which answers as `Comlink.expose`
 * would). Only `storage-worker-client.ts` starts it.
 *
 * @module
 */
import { parentPort } from "node:worker_threads";
import * as Comlink from "comlink";
import nodeEndpoint from "comlink/dist/esm/node-adapter.mjs";
import { serveComlinkCalls, storageWorkerApi } from "../core/storage-worker.ts";
import { NodeFileStorage, type NodeFileStorageOptions } from "./fs-storage.ts";

if (!parentPort) throw new Error("storage-worker.ts runs only as a worker_threads worker");
serveComlinkCalls(
  Comlink,
  nodeEndpoint(parentPort),
  (comlink) => storageWorkerApi(comlink, (options: NodeFileStorageOptions) => new NodeFileStorage(options)),
);
