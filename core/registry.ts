/**
 * The session registry, {@linkcode Sessions}, as an entry of its own beside `core/reader.ts`:
 * the session handle and every writer come with it (commits, compaction, repair, runs). A
 * runtime that opens sessions imports it; code that only reads a store through
 * `core/reader.ts` (the file store, the CLI's `show`) then loads none of the writers, since a
 * bundle splits code by which entry reaches a module (docs/decisions.md "show reads without
 * the writers"). Not in the package's `exports` (`Sessions` is exported by `core/mod.ts` too).
 *
 * @example
 * ```ts
 * // The same name as the package's (this module is not an export of its own):
 * import { MemoryStorage, Sessions } from "sessionfold";
 * const sessions = new Sessions({ storage: new MemoryStorage() });
 * ```
 * @module
 */
export { Sessions } from "./session/registry.ts";
// The check of session options a runtime's open function takes as `defaults`, named as it was given.
export { assertSessionOptions } from "./session/options.ts";
