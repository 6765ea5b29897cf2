/**
 * JSONL encoding and decoding with the recovery rules of docs/FORMAT.md: torn tails,
 * corrupt lines by file and line, unknown record types skipped and reported.
 *
 * @example
 * ```ts
 * import { decodeJsonl, encodeJsonl, MessageRecord } from "sessionfold";
 * declare const records: MessageRecord[];
 * const result = decodeJsonl(encodeJsonl(records), { file: "messages/active.jsonl", schemas: { message: MessageRecord } });
 * ```
 * @module
 */
export * from "./diagnostic.ts";
export * from "./decode.ts";
export * from "./encode.ts";
export * from "./tail.ts";
