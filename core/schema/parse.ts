import { CorruptSessionError, UnsupportedSchemaError } from "../errors.ts";
import { escapedExcerpt } from "./excerpt.ts";
import { draftCheck, lockCheck, metaCheck, type RecordCheck } from "./fast-check.ts";
import { describeJsonError } from "./json-error.ts";
import type { DraftRecord } from "./message.ts";
import type { SessionMeta, WriterLockRecord } from "./meta.ts";
import { utf8Bytes } from "./utf8.ts";
import { META_SCHEMA_VERSION } from "./version.ts";

/** What {@linkcode describeIssues} reads of an error: zod's `ZodError` or a hand-written check's (core/schema/fast-check.ts). */
export interface IssueList {
  readonly issues: readonly { readonly path: readonly PropertyKey[]; readonly message: string }[];
}

/**
 * A one-line account of what a zod schema rejected: `parts.0.text: expected string`.
 *
 * @example
 * ```ts
 * import { MessageRecord } from "sessionfold";
 *
 * const r = MessageRecord.safeParse({});
 * if (!r.success) describeIssues(r.error); // "record_type: Invalid input: expected \"message\"; …"
 * ```
 */
export function describeIssues(error: IssueList, max = 3): string {
  const shown = error.issues.slice(0, max).map((issue) => {
    const where = issue.path.length > 0 ? issue.path.map(String).join(".") : "(record)";
    return `${where}: ${issue.message}`;
  });
  const more = error.issues.length > max ? `; and ${error.issues.length - max} more` : "";
  return shown.join("; ") + more;
}

const decoder = new TextDecoder("utf-8", { fatal: true });

/** Decodes UTF-8 bytes, throwing {@linkcode CorruptSessionError} naming `file` when they are not UTF-8. */
export function decodeUtf8(bytes: Uint8Array, file: string): string {
  try {
    return decoder.decode(bytes);
  } catch {
    throw new CorruptSessionError(`${file}: not valid UTF-8`, { file, line: null });
  }
}

function parseJsonDocument(bytes: Uint8Array | string, file: string): unknown {
  const text = typeof bytes === "string" ? bytes : decodeUtf8(bytes, file);
  try {
    return JSON.parse(text);
  } catch {
    throw invalidJson(text, file);
  }
}

/** The error for a document that is not JSON (apart, as {@linkcode invalidRecord}). */
function invalidJson(text: string, file: string): CorruptSessionError {
  return new CorruptSessionError(`${file}: ${describeJsonError(text)}`, { file, line: null, code: "invalid_json" });
}

/** A non-string JSON value in a message, bounded: a number as is, anything else by its kind. */
function describeScalar(value: unknown): string {
  if (typeof value === "number" || typeof value === "boolean" || value === null) return String(value);
  return Array.isArray(value) ? "an array" : "an object";
}

function validated<T>(check: RecordCheck<T>, value: unknown, file: string, what: string): T {
  const result = check.safeParse(value);
  if (!result.success) throw invalidRecord(result.error, file, what);
  return result.data;
}

/** The error for a document its check refused (apart: a sound document's first check compiles none of it). */
function invalidRecord(error: IssueList, file: string, what: string): CorruptSessionError {
  return new CorruptSessionError(`${file}: not a valid ${what}: ${describeIssues(error)}`, { file, line: null, code: "invalid_record" });
}

/**
 * Parses `meta.json`. An unknown `schema_version` is refused, never guessed.
 *
 * @example
 * ```ts
 * declare const bytes: Uint8Array;
 *
 * const meta = parseMetaJson(bytes, "meta.json");
 * ```
 * @throws {UnsupportedSchemaError} when `schema_version` is not 1, or missing from the object.
 * @throws {CorruptSessionError} when it is not JSON or not a valid meta record.
 */
export function parseMetaJson(bytes: Uint8Array | string, file = "meta.json"): SessionMeta {
  return metaOfDocument(parseJsonDocument(bytes, file), file);
}

/**
 * A `meta.json` document already parsed as JSON (a catalog entry holds one,
 * docs/FORMAT.md "The catalog"), checked as {@linkcode parseMetaJson} checks the file.
 *
 * @example
 * ```ts
 * declare const document: unknown; // a catalog entry's meta
 * const meta = metaOfDocument(document, "a1/w1/s1 (catalog)");
 * ```
 * @throws {UnsupportedSchemaError} when `schema_version` is not 1, or missing from the object.
 * @throws {CorruptSessionError} when it is not a valid meta record.
 */
export function metaOfDocument(value: unknown, file = "meta.json"): SessionMeta {
  // Only a JSON object can carry a version; anything else (array, null, scalar) is corrupt.
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const version = Object.hasOwn(value, "schema_version") ? (value as { schema_version?: unknown }).schema_version : undefined;
    if (version !== META_SCHEMA_VERSION) throw unsupportedVersion(version, file);
  }
  return validated(metaCheck, value, file, "meta.json record");
}

/** The error for a `meta.json` whose `schema_version` this reader does not know (apart: an open of a sound session never runs it). */
function unsupportedVersion(version: unknown, file: string): UnsupportedSchemaError {
  // A missing version is refused too: a reader never guesses that an unversioned document is version 1.
  const found = version === undefined ? "is missing" : `${typeof version === "string" ? escapedExcerpt(version) : describeScalar(version)} is not supported`;
  return new UnsupportedSchemaError(`${file}: schema_version ${found} (this reader knows ${META_SCHEMA_VERSION})`, {
    file,
    schema_version: version ?? null,
  });
}

/**
 * Parses `assistant_message.json`, the streaming draft.
 *
 * @example
 * ```ts
 * import { MemoryStorage, sessionPaths } from "sessionfold";
 * const storage = new MemoryStorage();
 * const paths = sessionPaths({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
 * const bytes = await storage.read(paths.draft);
 * if (bytes) console.log(parseDraftJson(bytes).sequence);
 * ```
 * @throws {CorruptSessionError} when it is not JSON or not a valid draft.
 */
export function parseDraftJson(bytes: Uint8Array | string, file = "messages/assistant_message.json"): DraftRecord {
  return validated(draftCheck, parseJsonDocument(bytes, file), file, "draft message");
}

/**
 * Parses `writer.lock`.
 *
 * @example
 * ```ts
 * import { MemoryStorage, sessionPaths } from "sessionfold";
 * const storage = new MemoryStorage();
 * const bytes = await storage.read(sessionPaths({ agentId: "a1", workspaceId: "w1", sessionId: "s1" }).lock);
 * if (bytes) console.log(parseLockJson(bytes).pid);
 * ```
 * @throws {CorruptSessionError} when it is not JSON or not a valid lock record.
 */
export function parseLockJson(bytes: Uint8Array | string, file = "writer.lock"): WriterLockRecord {
  return validated(lockCheck, parseJsonDocument(bytes, file), file, "writer lock");
}

/**
 * `true` for a document of nothing but whitespace and NUL bytes: what a machine crash can
 * leave of an unflushed write on some file systems. Such a `meta.json` counts as missing.
 *
 * @example
 * ```ts
 * isBlankDocument(new Uint8Array(8)); // true
 * ```
 */
export function isBlankDocument(bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (byte !== 0 && byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09) return false;
  }
  return true;
}

/**
 * The `revision` of a `meta.json`, `undefined` when it is missing or blank: the value the
 * optimistic revision check compares.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * const storage = new MemoryStorage();
 *
 * import { sessionPaths } from "sessionfold";
 * const paths = sessionPaths({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
 * metaRevisionOf(await storage.read(paths.meta)); // 42
 * ```
 * @throws {CorruptSessionError} when the document is not a valid `meta.json`.
 * @throws {UnsupportedSchemaError} when its `schema_version` is unknown.
 */
export function metaRevisionOf(bytes: Uint8Array | undefined): number | undefined {
  return bytes && !isBlankDocument(bytes) ? parseMetaJson(bytes).revision : undefined;
}

/**
 * JSON of a document file (`meta.json`, the draft, the lock), newline-terminated.
 *
 * @example
 * ```ts
 * new TextDecoder().decode(encodeJsonDocument({ a: 1 })); // '{\n  "a": 1\n}\n'
 * ```
 */
export function encodeJsonDocument(value: unknown): Uint8Array {
  return utf8Bytes(`${JSON.stringify(value, null, 2)}\n`);
}
