/**
 * The core as a storage worker needs it: the storage worker API and the serving half of
 * Comlink's protocol that answers with it, every error class with them (an error crosses the
 * thread typed). A narrow door of its own beside `core/reader.ts`, which the worker's file
 * store imports too: `reader.ts` stays what reading a store needs, so the CLI's `show`, which
 * loads it, does not load the error classes of the importers and agent definitions that the
 * worker's error transfer registers (docs/decisions.md "The first open's cold code, a fifth
 * round"). Every name here is exported by `core/internal.ts` too; not in the package's
 * `exports`.
 *
 * @example
 * ```ts
 * // Its own names, as the storage workers import them (this module is not an export of the package):
 * console.log(typeof serveComlinkCalls, typeof storageWorkerApi); // "function function"
 * ```
 * @module
 */
export { serveComlinkCalls } from "./worker/comlink-serve.ts";
export { storageWorkerApi } from "./worker/storage-api.ts";
