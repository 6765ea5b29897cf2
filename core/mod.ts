/**
 * sessionfold: AI-agent sessions that never lose a message and never slow down as
 * they grow. This is the portable core: records, the JSONL codec and its recovery
 * rules, the on-disk layout and the storage port. It uses web-standard APIs only and
 * runs unchanged in Node, browsers, workers, Deno and Bun.
 *
 * @example
 * ```ts
 * import { MemoryStorage, sessionPaths, parseSessionRef } from "sessionfold";
 * const storage = new MemoryStorage();
 * const paths = sessionPaths(parseSessionRef("agent/workspace/s1"));
 * ```
 * @module
 */
export * from "./errors.ts";
export * from "./error-wire.ts";
export * from "./schema/mod.ts";
export * from "./jsonl/mod.ts";
export * from "./layout/mod.ts";
export * from "./storage/mod.ts";
export * from "./composer/mod.ts";
export * from "./compaction/mod.ts";
export * from "./session/mod.ts";
export * from "./agent/mod.ts";
export * from "./summarizer/mod.ts";
export * from "./formats/mod.ts";
export * from "./export/mod.ts";
