/**
 * The worker thread of {@linkcode WorkerFileStorage}: one {@linkcode NodeFileStorage},
 * opened with the options the host sends first, served over Comlink by the core's
 * storage worker API. Only `storage-worker-client.ts` starts it.
 *
 * @module
 */
import { parentPort } from "node:worker_threads";
import * as Comlink from "comlink";
import nodeEndpoint from "comlink/dist/esm/node-adapter.mjs";
import { registerErrorTransfer, storageWorkerApi } from "../core/reader.ts";
import { NodeFileStorage, type NodeFileStorageOptions } from "./fs-storage.ts";

if (!parentPort) throw new Error("storage-worker.ts runs only as a worker_threads worker");
registerErrorTransfer(Comlink);
Comlink.expose(
  storageWorkerApi(Comlink, (options: NodeFileStorageOptions) => new NodeFileStorage(options)),
  nodeEndpoint(parentPort),
);
