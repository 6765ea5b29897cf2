/**
 * The catalog (docs/FORMAT.md "The catalog"): per folder of sessions, one small record per
 * session holding its `meta.json` document, kept by the backend beside the content and
 * written by the same storage call (the same transaction where the backend has them) as
 * `meta.json` itself. Listing then reads one catalog per workspace instead of one file per
 * session. The catalog is a copy: it is rebuilt from every `meta.json`, and `meta.json` wins
 * wherever both are read.
 *
 * A backend derives the entry from the write it is given, so every writer that goes through
 * the port (a commit, a compaction, a repair, an import, a sync, an archive, a delete)
 * keeps the catalog without knowing of it. These helpers are the one definition of what is
 * catalogued and how an entry's document is read from the bytes written.
 *
 * @module
 */
import { isValidId } from "../layout/ids.ts";
import { encodeJsonDocument } from "../schema/parse.ts";
import { Stamped } from "../schema/stamped.ts";

/** One session in a catalog: its folder's name and the `meta.json` document the catalog holds for it. */
export interface CatalogEntry {
  /** The session folder's name (the session id; a staged folder's hidden name is never listed). */
  readonly name: string;
  /** The `meta.json` document, parsed as JSON; `undefined` when what was written is not a JSON document (read `meta.json` itself). */
  readonly meta: unknown;
}

/**
 * A page a listing asks {@linkcode StoragePort.readCatalog} for: the first `limit` sessions by
 * last activity (`updated_at` newest first, then by folder name) after `after`, if given: those
 * active before `after.updatedAt`, or as recently with a folder name above `after.name`. A
 * backend that keeps its catalog in that order (PostgreSQL's index, the sorted snapshot on
 * files) answers with what that page needs (`CatalogListing.paged`); any other may answer
 * with every entry. Either way the caller sorts and cuts.
 */
export interface CatalogPage {
  readonly limit: number;
  readonly after?: { readonly updatedAt: string; readonly name: string };
}

/** What {@linkcode StoragePort.readCatalog} found for one folder of sessions. */
export interface CatalogListing {
  /** The entries of the folder's sessions, newest write per session, in no particular order. */
  readonly entries: readonly CatalogEntry[];
  /**
   * Session folders that exist but have no entry (a catalog not yet rebuilt after an upgrade,
   * a write outside sessionfold, a crash between `meta.json` and its entry on a backend
   * without transactions): the caller reads their `meta.json`.
   */
  readonly unlisted: readonly string[];
  /**
   * `true` when `entries` holds only what the page asked for needs (see {@linkcode CatalogPage}):
   * at least its sessions that have an entry, maybe a few more (on files, every entry of the
   * log), never every entry of a large catalog.
   */
  readonly paged?: boolean;
}

/** The folder of sessions and the session a write of `path` catalogues, or `undefined` when `path` is not a session's `meta.json`. */
export interface CataloguedPath {
  /** `agents/<agent>/workspaces/<workspace>/sessions` or `…/archived-sessions`. */
  readonly dir: string;
  /** The session folder's name (checked by the reader, not here: a staged folder has a hidden one). */
  readonly name: string;
}

const META_PATH = /^(agents\/[^/]+\/workspaces\/[^/]+\/(?:sessions|archived-sessions))\/([^/]+)\/meta\.json$/;
const SESSION_DIR = /^(agents\/[^/]+\/workspaces\/[^/]+\/(?:sessions|archived-sessions))\/([^/]+)$/;

/**
 * The catalog a write of `path` changes: a session's `meta.json`
 * (`agents/<a>/workspaces/<w>/sessions/<s>/meta.json`, or under `archived-sessions/`).
 *
 * @example
 * ```ts
 * cataloguedPath("agents/a1/workspaces/w1/sessions/s1/meta.json"); // { dir: "agents/a1/workspaces/w1/sessions", name: "s1" }
 * cataloguedPath("agents/a1/workspaces/w1/sessions/s1/messages/active.jsonl"); // undefined
 * ```
 */
export function cataloguedPath(path: string): CataloguedPath | undefined {
  const match = META_PATH.exec(path);
  return match ? { dir: match[1]!, name: match[2]! } : undefined;
}

/**
 * The catalog whose entry a move or removal of the folder `path` carries: a session folder.
 *
 * @example
 * ```ts
 * cataloguedFolder("agents/a1/workspaces/w1/archived-sessions/s1"); // { dir: "agents/a1/workspaces/w1/archived-sessions", name: "s1" }
 * ```
 */
export function cataloguedFolder(path: string): CataloguedPath | undefined {
  const match = SESSION_DIR.exec(path);
  return match ? { dir: match[1]!, name: match[2]! } : undefined;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * The fields of `meta.json` a catalog entry holds: what a listing shows (docs/FORMAT.md
 * "The catalog"). The provider, the timezone and extension fields stay in `meta.json`.
 */
export const CATALOG_FIELDS: readonly string[] = [
  "schema_version",
  "session_id",
  "agent_id",
  "workspace_id",
  "title",
  "model_label",
  "created_at",
  "updated_at",
  "message_count",
  "history_bytes",
  "revision",
  "forked_from",
  "compaction",
];

/**
 * The document a catalog entry holds for the `meta.json` bytes written: the
 * {@linkcode CATALOG_FIELDS} of the JSON object, or `undefined` when the bytes are not a
 * JSON object or is sealed (the reader then reads `meta.json`). Bytes that
 * {@linkcode encodeMetaDocument} returned are read from the document they encode, with the same result.
 *
 * @example
 * ```ts
 * catalogDocument(new TextEncoder().encode('{"revision":3,"provider":{}}')); // { revision: 3 }
 * catalogDocument(new TextEncoder().encode("not json")); // undefined
 * catalogDocument(new TextEncoder().encode('{"sealed":1,"revision":3}')); // undefined (read from its file)
 * ```
 */
export function catalogDocument(bytes: Uint8Array): Record<string, unknown> | undefined {
  const encodedFrom = EncodedDocument.of(bytes);
  if (encodedFrom) {
    const picked = pickedPlainFields(encodedFrom);
    if (picked !== null) return picked;
  }
  let value: unknown;
  try {
    value = JSON.parse(strictUtf8.decode(bytes));
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  // A sealed meta.json (docs/FORMAT.md "Encrypted stores") is read from its file: its fields are
  // what its reader opens, and an entry would drop the `sealed` marker a sync server goes by.
  if (Object.hasOwn(value, "sealed")) return undefined;
  const picked: Record<string, unknown> = {};
  for (const field of CATALOG_FIELDS) {
    if (Object.hasOwn(value, field)) picked[field] = (value as Record<string, unknown>)[field];
  }
  return picked;
}

/**
 * The document {@linkcode encodeMetaDocument} encoded, in a private field of the very bytes it
 * returned (a copy of them, or sealed bytes, carry none). A field, not a `WeakMap` entry: an
 * entry per commit cost about a microsecond more and weighs on every collection
 * (docs/decisions.md "PostgreSQL's per-operation commit: `meta.json`'s document on its bytes").
 */
class EncodedDocument extends Stamped {
  readonly #document: object;

  private constructor(bytes: Uint8Array, document: object) {
    super(bytes);
    this.#document = document;
  }

  static of(bytes: Uint8Array): object | undefined {
    return #document in bytes ? (bytes as unknown as EncodedDocument).#document : undefined;
  }

  static remember(bytes: Uint8Array, document: object): void {
    new EncodedDocument(bytes, document);
  }
}

/**
 * A `meta.json` document's bytes ({@linkcode encodeJsonDocument}), remembered with the
 * document they encode: {@linkcode catalogDocument} of these very bytes then picks the
 * catalog's fields from `document` instead of decoding and parsing them again (a backend that
 * keeps a catalog reads every `meta.json` a commit writes, docs/decisions.md "PostgreSQL's
 * per-operation commit: the client's own work"). Only the same `Uint8Array` finds it: bytes a
 * wrapper sealed, or a worker received as a copy, are parsed as before. `document` must not
 * change afterwards (the core's `SessionMeta` values never do).
 *
 * @example
 * ```ts
 * const bytes = encodeMetaDocument({ revision: 3, title: "t", provider: { provider: "p" } });
 * catalogDocument(bytes); // { title: "t", revision: 3 }, not parsed again
 * ```
 */
export function encodeMetaDocument(document: object): Uint8Array {
  const bytes = encodeJsonDocument(document);
  EncodedDocument.remember(bytes, document);
  return bytes;
}

/**
 * {@linkcode catalogDocument} of the bytes `document` was encoded to, taken from `document`
 * where that is exactly what parsing them gives: its catalog fields plain values (a string, a
 * finite number other than -0, a boolean, `null`; a field set to `undefined` is left out, as
 * JSON leaves it out). `null` (parse the bytes) for a field holding an object or an array, so
 * no entry ever shares an object with the session's state.
 */
function pickedPlainFields(document: object): Record<string, unknown> | undefined | null {
  if ((document as Record<string, unknown>)["sealed"] !== undefined && Object.hasOwn(document, "sealed")) return undefined;
  const picked: Record<string, unknown> = {};
  for (const field of CATALOG_FIELDS) {
    if (!Object.hasOwn(document, field)) continue;
    const value = (document as Record<string, unknown>)[field];
    if (value === undefined) continue;
    if (
      typeof value === "number"
        ? !Number.isFinite(value) || Object.is(value, -0)
        : typeof value === "object"
        ? value !== null
        : typeof value !== "string" && typeof value !== "boolean"
    ) return null;
    picked[field] = value;
  }
  return picked;
}

/**
 * Whether a catalogued folder name is listed: a valid session id (a staged fork or import
 * has a hidden name, and is listed once it is moved into place).
 *
 * @example
 * ```ts
 * isListedName("s1"); // true
 * isListedName(".fork-s1-t_01"); // false
 * ```
 */
export function isListedName(name: string): boolean {
  return isValidId(name);
}
