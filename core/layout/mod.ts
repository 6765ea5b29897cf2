/**
 * Ids, paths and segment names of the on-disk layout (docs/FORMAT.md). Every id is
 * validated before any path is built, so a hostile id never reaches storage.
 *
 * @example
 * ```ts
 * import { sessionPaths, parseSessionRef } from "sessionfold";
 * sessionPaths(parseSessionRef("a1/w1/s1")).meta; // "agents/a1/workspaces/w1/sessions/s1/meta.json"
 * ```
 * @module
 */
export * from "./ids.ts";
export * from "./paths.ts";
export * from "./segments.ts";
