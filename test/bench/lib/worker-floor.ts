/**
 * What bounds `open.node.*` from below on this platform: the files a sessionfold open
 * reads (`meta.json`, `active.jsonl`, the draft, `instruction.md`, and whether
 * `segments/` is there), read with plain `fs` calls in a bare worker thread and posted back
 * to the host (the buffers transferred), then parsed the way plain JSONL is. No checks, no
 * recovery rules, no store: one message each way and the same reads, which every
 * worker-backed open pays whatever it does.
 *
 * @module
 */
import { Worker } from "node:worker_threads";
// The layout module alone, not the core: the peers' probe (`probe-peers.ts`) loads no more of sessionfold.
import { sessionPaths } from "../../../core/layout/paths.ts";
import { BENCH_REF } from "./bench-ref.ts";
import { contextFromPlainJsonl } from "./plain-jsonl.ts";

/** The worker: answers each list of files with their bytes (`null` when missing), transferred. */
const WORKER_CODE = `
const { readFileSync, lstatSync } = require("node:fs");
const { parentPort } = require("node:worker_threads");
const read = (file) => {
  try {
    const bytes = readFileSync(file);
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
  } catch (error) {
    if (error.code === "ENOENT") return null;
    throw error;
  }
};
parentPort.on("message", ({ files, folder }) => {
  const found = files.map(read);
  const segments = lstatSync(folder, { throwIfNoEntry: false }) !== undefined;
  parentPort.postMessage({ found, segments }, found.filter((b) => b && b.byteOffset === 0 && b.byteLength === b.buffer.byteLength).map((b) => b.buffer));
});
`;

/** The worker's answer: each file's bytes (`null`: missing), and whether `segments/` exists. */
interface Answer {
  readonly found: (Uint8Array | null)[];
  readonly segments: boolean;
}

/** A started floor worker for the store at `root`; `open()` is one measured read + parse. */
export interface WorkerFloor {
  open(): Promise<{ messages: number; summaryChars: number }>;
  close(): Promise<void>;
}

/** Starts the worker and makes one round trip (as the store's worker is up before the clock starts). */
export async function startWorkerFloor(root: string): Promise<WorkerFloor> {
  const worker = new Worker(WORKER_CODE, { eval: true });
  const paths = sessionPaths(BENCH_REF);
  const files = [paths.meta, paths.active, paths.draft, paths.instruction].map((key) => `${root}/${key}`);
  const folder = `${root}/${paths.segmentsDir}`;
  let pending: { resolve: (answer: Answer) => void; reject: (error: unknown) => void } | undefined;
  worker.on("message", (answer: Answer) => pending?.resolve(answer));
  worker.on("error", (error) => pending?.reject(error));
  const ask = () =>
    new Promise<Answer>((resolve, reject) => {
      pending = { resolve, reject };
      worker.postMessage({ files, folder });
    });
  await ask();
  const decoder = new TextDecoder();
  return {
    async open() {
      const { found } = await ask();
      JSON.parse(decoder.decode(found[0]!));
      const context = contextFromPlainJsonl(decoder.decode(found[1]!));
      return { messages: context.messages.length, summaryChars: context.summary?.length ?? 0 };
    },
    async close() {
      await worker.terminate();
    },
  };
}
