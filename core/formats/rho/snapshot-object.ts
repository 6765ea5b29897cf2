import type { CompactionAccounting } from "../../schema/meta.ts";
import { unsupportedVersion } from "../errors.ts";
import { pathText, type Value } from "../shape.ts";
import { parseRhoEntry, parseRhoIdentity } from "./entries.ts";
import type { RhoEntry, RhoIdentity } from "./types.ts";

/** The snapshot schema versions this reader knows: 1 (migrated) and 2 (current). */
export const RHO_SNAPSHOT_VERSIONS = [1, 2] as const;
/** The schema version every export writes. */
export const RHO_SNAPSHOT_VERSION = 2;

/** A validated `SessionSnapshot` (schema 1 already migrated: it has no prompt-cache key). */
export interface RhoSnapshot {
  readonly schemaVersion: 1 | 2;
  readonly sessionId: string;
  readonly revision: number;
  readonly history: RhoEntry[];
  /** The JSON text of each history entry as written (to tell unchanged entries apart). */
  readonly historyKeys: string[];
  readonly provider: RhoIdentity;
  /** Absent when the document has no `compaction` (Rho's default: nothing compacted). */
  readonly compaction?: CompactionAccounting;
  readonly metadata: Record<string, string>;
  readonly promptCacheKey?: string;
}

/**
 * Checks a `schema_version`: 1 or 2.
 *
 * @throws {UnsupportedSchemaError} for any other integer (never guessed).
 * @throws {FormatError} when it is absent or not an integer.
 */
function rhoSnapshotVersion(value: Value): 1 | 2 {
  if (typeof value.raw === "number" && Number.isInteger(value.raw)) {
    if (value.raw === 1 || value.raw === 2) return value.raw;
    throw unsupportedVersion(
      { format: value.site.format, file: value.site.file, line: value.site.lineOf(value.path), path: pathText(value.path) },
      value.raw,
      RHO_SNAPSHOT_VERSIONS,
    );
  }
  return value.fail("an integer schema_version (1 or 2)");
}

/**
 * Validates a `SessionSnapshot` object, schema 1 or 2: `schema_version`, `session_id`,
 * `revision`, `history`, `provider`, and optionally `compaction`, `metadata` and (schema 2)
 * `prompt_cache_key`. The version is checked first, so a document of an unknown version is
 * refused as such whatever its shape. Unknown fields are ignored, as Rho's reader does;
 * a schema 1 document migrates with no prompt-cache key.
 *
 * @example
 * ```ts
 * declare const text: string;
 *
 * declare const value: Parameters<typeof parseRhoSnapshotObject>[0]; // the parsed document
 * const snapshot = parseRhoSnapshotObject(value);
 * ```
 * @throws {UnsupportedSchemaError} when `schema_version` is another integer.
 * @throws {FormatError} naming the path (and line) of the first invalid value.
 */
export function parseRhoSnapshotObject(value: Value): RhoSnapshot {
  value.object("a session snapshot object");
  const schemaVersion = rhoSnapshotVersion(value.field("schema_version"));
  const sessionId = value.field("session_id").string({ nonEmpty: true });
  const revision = value.field("revision").count();
  const entries = value.field("history").array("the history: an array of messages");
  const history = entries.map(parseRhoEntry);
  const provider = parseRhoIdentity(value.field("provider"));
  const compaction = value.field("compaction").optional();
  const metadata = value.field("metadata").optional()?.stringMap() ?? {};
  const key = schemaVersion === 2 ? value.field("prompt_cache_key").optional()?.string() : undefined;
  return {
    schemaVersion,
    sessionId,
    revision,
    history,
    historyKeys: entries.map((entry) => JSON.stringify(entry.raw)),
    provider,
    ...(compaction ? { compaction: parseRhoCompaction(compaction) } : {}),
    metadata,
    ...(key !== undefined ? { promptCacheKey: key } : {}),
  };
}

/**
 * The `metadata` key that holds a session's title. Rho's `SessionSnapshot` has no title field;
 * its own fixtures and tests keep the title as `metadata.title` (core/formats/README.md), so
 * sessionfold carries it there both ways (docs/decisions.md).
 */
const RHO_TITLE_KEY = "title";

/**
 * The title a Rho snapshot's metadata holds (its `title` entry) as a `PortableSession` field
 * to spread: `{ title }`, or `{}` when there is none.
 *
 * @example
 * ```ts
 * rhoTitleField({ title: "Fix the add test", host: "rho-cli" }); // { title: "Fix the add test" }
 * rhoTitleField({ host: "rho-cli" }); // {}
 * ```
 */
export function rhoTitleField(metadata: Readonly<Record<string, string>>): { title?: string } {
  const title = Object.hasOwn(metadata, RHO_TITLE_KEY) ? metadata[RHO_TITLE_KEY] : undefined;
  return title !== undefined ? { title } : {};
}

/**
 * The `metadata` an export writes: the session's metadata with its title as `title` (the
 * session's title wins over one it was imported with: it may have been renamed since).
 *
 * @example
 * ```ts
 * rhoMetadataOf({ title: "Renamed", metadata: { title: "Old", host: "rho-cli" } }); // { title: "Renamed", host: "rho-cli" }
 * ```
 */
export function rhoMetadataOf(session: { readonly title?: string; readonly metadata?: Readonly<Record<string, string>> }): Record<string, string> {
  return { ...session.metadata, ...(session.title !== undefined ? { [RHO_TITLE_KEY]: session.title } : {}) };
}

/**
 * Rho's `CompactionState` as sessionfold's compaction accounting: `completed_compactions` →
 * `completed`, `removed_messages`, `removed_tokens` → `removed_tokens_estimate`,
 * `removed_cost_usd_micros` → `cost_usd_micros` (when not 0), `last_previous_tokens` →
 * `last_before_tokens`, `last_current_tokens` → `last_after_tokens`, and `last_revision`
 * kept as an extension field of the same name.
 *
 * @example
 * ```ts
 * declare const value: Parameters<typeof parseRhoCompaction>[0];
 * parseRhoCompaction(value); // { completed: 2, removed_messages: 7, removed_tokens_estimate: 0, last_revision: 4 }
 * ```
 * @throws {FormatError} when a counter is missing or not a non-negative integer.
 */
export function parseRhoCompaction(value: Value): CompactionAccounting {
  value.object("compaction state {completed_compactions, removed_messages, …}");
  const optional = (key: string): number | undefined => value.field(key).optional()?.count();
  const cost = optional("removed_cost_usd_micros");
  const before = optional("last_previous_tokens");
  const after = optional("last_current_tokens");
  const lastRevision = optional("last_revision");
  return {
    completed: value.field("completed_compactions").count(),
    removed_messages: value.field("removed_messages").count(),
    removed_tokens_estimate: optional("removed_tokens") ?? 0,
    ...(cost !== undefined && cost > 0 ? { cost_usd_micros: cost } : {}),
    ...(before !== undefined ? { last_before_tokens: before } : {}),
    ...(after !== undefined ? { last_after_tokens: after } : {}),
    ...(lastRevision !== undefined ? { last_revision: lastRevision } : {}),
  };
}

/**
 * sessionfold compaction accounting as Rho's `CompactionState` (all seven fields, as Rho writes them).
 *
 * @example
 * ```ts
 * rhoCompactionOf(undefined); // { completed_compactions: 0, removed_messages: 0, …, last_revision: null }
 * ```
 */
export function rhoCompactionOf(compaction: CompactionAccounting | undefined): Record<string, number | null> {
  const lastRevision = (compaction as { last_revision?: unknown } | undefined)?.last_revision;
  return {
    completed_compactions: compaction?.completed ?? 0,
    removed_messages: compaction?.removed_messages ?? 0,
    removed_tokens: compaction?.removed_tokens_estimate ?? 0,
    removed_cost_usd_micros: compaction?.cost_usd_micros ?? 0,
    last_previous_tokens: compaction?.last_before_tokens ?? null,
    last_current_tokens: compaction?.last_after_tokens ?? null,
    last_revision: typeof lastRevision === "number" && Number.isSafeInteger(lastRevision) && lastRevision >= 0 ? lastRevision : null,
  };
}
