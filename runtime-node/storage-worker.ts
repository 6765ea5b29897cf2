/**
 * The worker thread of {@linkcode WorkerStorage}: one {@linkcode NodeFileStorage} over the
 * root passed in `workerData`, exposed over Comlink. Only `worker-storage.ts` starts it.
 *
 * @module
 */
import { parentPort, workerData } from "node:worker_threads";
import * as Comlink from "comlink";
import nodeEndpoint from "comlink/dist/esm/node-adapter.mjs";
import { runCommitPlan, type StoragePort } from "../core/mod.ts";
import { NodeFileStorage, type NodeFileStorageOptions } from "./fs-storage.ts";
import { registerErrorTransfer, withTransfer } from "../core/internal.ts";

/** What the host calls through Comlink: the port's methods, results transferred where that saves a copy. */
export type StorageWorkerApi = Required<Omit<StoragePort, "capabilities" | "close" | "acquireLock" | "releaseLock">>;

if (!parentPort) throw new Error("storage-worker.ts runs only as a worker_threads worker");
registerErrorTransfer(Comlink);
const storage = new NodeFileStorage((workerData as { options: NodeFileStorageOptions }).options);

const api: StorageWorkerApi = {
  read: async (path) => {
    const bytes = await storage.read(path);
    return bytes && withTransfer(Comlink, bytes, bytes);
  },
  readTail: async (path, maxBytes) => {
    const tail = await storage.readTail(path, maxBytes);
    return tail && withTransfer(Comlink, { bytes: tail.bytes, size: tail.size }, tail.bytes);
  },
  list: (dir) => storage.list(dir),
  replace: (path, bytes, options) => storage.replace(path, bytes, options),
  append: (path, bytes) => storage.append(path, bytes),
  createExclusive: (path, bytes, options) => storage.createExclusive(path, bytes, options),
  truncate: (path, length) => storage.truncate(path, length),
  remove: (path, options) => storage.remove(path, options),
  move: (from, to) => storage.move(from, to),
  runCommitPlan: (plan) => runCommitPlan(storage, plan),
};

Comlink.expose(api, nodeEndpoint(parentPort));
