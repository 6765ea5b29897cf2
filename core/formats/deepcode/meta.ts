import { unsupportedVersion } from "../errors.ts";
import { parseJsonDocument } from "../json-text.ts";
import { pathText, Value } from "../shape.ts";
import { flexibleTimestamp, isoTimestamp } from "../timestamps.ts";

/** A DeepCode session's metadata, whichever layout it came from. */
export interface DeepCodeMeta {
  readonly id: string;
  /** Absent when the header has none (DeepCode reads that as `""`, "unknown"). */
  readonly cwd?: string;
  /** Absent when the header has none: the reader takes it from the messages. */
  readonly createdAt?: string;
  /** Absent when the header has none: the reader takes it from the messages. */
  readonly updatedAt?: string;
  readonly model?: string;
  readonly title?: string;
}

/** The only `schema_version` of DeepCode Session Format v1. */
export const DEEPCODE_SCHEMA_VERSION = 1;

/**
 * Checks a v1 record's `schema_version` (header or message): it must be `1`.
 *
 * @example
 * ```ts
 * declare const record: Parameters<typeof checkSchemaVersion>[0];
 * checkSchemaVersion(record); // record.schema_version === 1
 * ```
 * @throws {UnsupportedSchemaError} for another integer.
 * @throws {FormatError} when it is absent or not an integer.
 */
export function checkSchemaVersion(record: Value): void {
  const version = record.field("schema_version");
  if (typeof version.raw === "number" && Number.isInteger(version.raw) && version.raw !== DEEPCODE_SCHEMA_VERSION) {
    const { site, path } = version;
    throw unsupportedVersion({ format: site.format, file: site.file, line: site.lineOf(path), path: pathText(path) }, version.raw, [DEEPCODE_SCHEMA_VERSION]);
  }
  if (version.raw !== DEEPCODE_SCHEMA_VERSION) version.fail(String(DEEPCODE_SCHEMA_VERSION));
}

function optionalText(record: Value, key: string): string | undefined {
  return record.field(key).optional()?.string();
}

function common(record: Value): Pick<DeepCodeMeta, "id" | "cwd"> & { model?: string; title?: string } {
  const model = optionalText(record, "model");
  const title = optionalText(record, "title");
  const cwd = optionalText(record, "cwd");
  return {
    id: record.field("id").string({ nonEmpty: true }),
    ...(cwd !== undefined ? { cwd } : {}),
    ...(model !== undefined ? { model } : {}),
    ...(title !== undefined ? { title } : {}),
  };
}

function checkMetaType(record: Value, expected: string): void {
  record.object(expected);
  const type = record.field("type");
  if (type.raw !== "session_meta") type.fail('"session_meta" (the first record is the session metadata)');
}

/**
 * The v1 header: `{"type":"session_meta","schema_version":1,"id","cwd"?,"created_at"?,"updated_at"?,"model"?,"title"?}`,
 * as DeepCode's own code writes it: `created_at` / `updated_at` ISO-8601 strings or Unix
 * seconds (a desktop-v0 header normalized to v1 keeps its numbers), either or both absent
 * and `cwd` empty or absent (a header DeepCode made for a session that had none). A
 * missing time is left out here: the reader takes it from the messages.
 *
 * @example
 * ```ts
 * declare const firstRecord: Parameters<typeof parseV1Header>[0];
 * const meta = parseV1Header(firstRecord);
 * ```
 * @throws {FormatError} when a field is missing or of the wrong type.
 * @throws {UnsupportedSchemaError} when `schema_version` is not 1.
 */
export function parseV1Header(record: Value): DeepCodeMeta {
  checkMetaType(record, "a session_meta header object");
  checkSchemaVersion(record);
  return { ...common(record), ...optionalTimes(record) };
}

function optionalTimes(record: Value): { createdAt?: string; updatedAt?: string } {
  const created = record.field("created_at").optional();
  const updated = record.field("updated_at").optional();
  return { ...(created ? { createdAt: flexibleTimestamp(created) } : {}), ...(updated ? { updatedAt: flexibleTimestamp(updated) } : {}) };
}

/**
 * The header DeepCode's desktop app prepended to a core-v0 stream when the session was
 * renamed (`session_set_title` before streams were normalized to v1):
 * `{"id","title","type":"session_meta"}`, no `schema_version`, no times, no `cwd`.
 *
 * @example
 * ```ts
 * declare const firstRecord: Parameters<typeof parseRenameHeader>[0];
 * parseRenameHeader(firstRecord).title; // "Fix the build"
 * ```
 * @throws {FormatError} when `id` is missing or `title` is not a string.
 */
export function parseRenameHeader(record: Value): { readonly id: string; readonly title?: string } {
  checkMetaType(record, "a session_meta header object");
  const title = optionalText(record, "title");
  return { id: record.field("id").string({ nonEmpty: true }), ...(title !== undefined ? { title } : {}) };
}

/**
 * Whether a `session_meta` record without `schema_version` is the rename header of a
 * core-v0 stream (no `created_at`, which every desktop-v0 header has) rather than a
 * desktop-v0 header.
 *
 * @example
 * ```ts
 * isRenameHeader({ type: "session_meta", id: "x", title: "T" }); // true
 * ```
 */
export function isRenameHeader(record: Record<string, unknown>): boolean {
  return record.type === "session_meta" && !Object.hasOwn(record, "schema_version") && !Object.hasOwn(record, "created_at");
}

/**
 * The desktop-v0 header: a `session_meta` record without `schema_version`, whose
 * `created_at` (and `updated_at`, when present) are Unix seconds; an ISO-8601 string is
 * accepted too. A missing `updated_at` is the `created_at`.
 *
 * @example
 * ```ts
 * declare const firstRecord: Parameters<typeof parseDesktopHeader>[0];
 * parseDesktopHeader(firstRecord).createdAt; // 1764680400 → "2025-12-02T13:00:00.000Z"
 * ```
 * @throws {FormatError} when a field is missing or of the wrong type, or `schema_version` is present.
 */
export function parseDesktopHeader(record: Value): DeepCodeMeta {
  checkMetaType(record, "a session_meta header object");
  const version = record.field("schema_version");
  if (version.raw !== undefined) version.fail("no schema_version in a desktop-v0 header");
  const createdAt = flexibleTimestamp(record.field("created_at"));
  const updated = record.field("updated_at").optional();
  return { ...common(record), createdAt, updatedAt: updated ? flexibleTimestamp(updated) : createdAt };
}

/**
 * The core-v0 `<id>.meta.json`: `{"id","cwd","createdAt","updatedAt","model"?,"title"?}`.
 *
 * @example
 * ```ts
 * const metaBytes = new TextEncoder().encode('{"title":"Fix the build"}');
 * const meta = parseCoreMeta(metaBytes, "abc.meta.json");
 * ```
 * @throws {FormatError} naming the meta file and line when it is not such a document
 */
export function parseCoreMeta(bytes: Uint8Array, file: string): DeepCodeMeta {
  const { value, site } = parseJsonDocument(bytes, file, "deepcode");
  const record = new Value(site, [], value).object("a core-v0 meta.json object");
  return { ...common(record), createdAt: isoTimestamp(record.field("createdAt")), updatedAt: isoTimestamp(record.field("updatedAt")) };
}
