/**
 * zod schemas of every record in docs/FORMAT.md, with their inferred types. Objects are
 * loose: unknown fields survive a read-modify-write.
 *
 * @example
 * ```ts
 * import { MessageRecord } from "sessionfold";
 * declare const line: string;
 * const message = MessageRecord.parse(JSON.parse(line));
 * ```
 * @module
 */
export * from "./common.ts";
export * from "./message.ts";
export * from "./summary.ts";
export * from "./meta.ts";
export * from "./parse.ts";
export { escapedExcerpt, EXCERPT_CHARS } from "./excerpt.ts";
export { describeJsonError, jsonSyntaxErrorAt, STRICT_JSON } from "./json-error.ts";
