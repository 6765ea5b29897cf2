import type { Diagnostic } from "../../jsonl/diagnostic.ts";
import type { PortableSession } from "../../model/mod.ts";
import { formatError, unsupportedVersion } from "../errors.ts";
import { readJsonlRecords } from "../jsonl-lines.ts";
import { pathText, type Value } from "../shape.ts";
import { flexibleTimestamp } from "../timestamps.ts";
import { rhoTitleField } from "./snapshot-object.ts";
import { rhoEntriesToMessages } from "./to-messages.ts";
import { RhoSessionTree, type RhoTreeSummary } from "./tree.ts";

/** The Rho application JSONL session versions this reader knows. */
export const RHO_JSONL_VERSIONS = [1, 2, 3, 4] as const;

/** Options of {@linkcode readRhoJsonl}. */
export interface RhoJsonlReadOptions {
  /** The node whose branch to import (any node id of the tree); default: the active leaf. */
  readonly branch?: string;
}

/** What {@linkcode readRhoJsonl} found. */
export interface RhoJsonlReadResult {
  readonly session: PortableSession;
  /** Non-fatal findings: a `truncated_tail` when the final line was an interrupted append. */
  readonly diagnostics: Diagnostic[];
  /** The tree: nodes, branches, what was left out. Absent when the file holds no state yet. */
  readonly tree?: RhoTreeSummary;
}

/**
 * Reads a Rho application JSONL session, versions 1 to 4, as Rho's `SessionTree` reads it:
 * a `session` header, then in versions 1–3 legacy records (`snapshot` bases,
 * `snapshot_delta` records whose `delta.base_revision` must equal the revision before it
 * and whose `session_id` must be the base's, `message` records: one appended history entry,
 * revision + 1, and `replace_history` records: a new history, revision + 1, counted as one
 * compaction); in version 4, or after the one `upgrade` record of a v1–v3 file Rho has
 * resumed, `node` records (a tree: each node's state is its parent's plus its `transition`)
 * and `set_leaf` records. The branch of the active leaf (or of `options.branch`) is
 * imported; the other branches are counted in `tree`. The branch's `metadata.title` is the
 * session's title, as for a snapshot. Display history is validated, not imported. Reading rules as for DeepCode: an invalid final line without a newline is an
 * interrupted append, ignored and reported as `truncated_tail`; any other invalid line
 * refuses the import with its line number. The bytes are never changed.
 *
 * A message's `created_at` is the `timestamp` of the record that added its history entry
 * (an entry a later base or replacement keeps unchanged, at the same place, keeps its time).
 *
 * @param file the name errors give the file.
 * @example
 * ```ts
 * import { Sessions } from "sessionfold";
 * declare const bytes: Uint8Array;
 * declare const sessions: Sessions;
 *
 * const { session, diagnostics, tree } = readRhoJsonl(bytes, "session.jsonl");
 * await sessions.importPortable("a1/w1/imported", session);
 * ```
 * @throws {UnsupportedSchemaError} when the header's `version` (or an embedded snapshot's
 * `schema_version`) is one this reader does not know.
 * @throws {FormatError} naming the file and line of the first invalid record: a delta on
 * the wrong base revision, a node whose parent is missing, a `ToolResult` without its call,
 * a missing header…
 * @throws {InvalidInputError} when `options.branch` names no node of the tree.
 */
export function readRhoJsonl(bytes: Uint8Array, file: string, options: RhoJsonlReadOptions = {}): RhoJsonlReadResult {
  let header: Header | undefined;
  let tree: RhoSessionTree | undefined;
  const starts = lineStarts(bytes);
  const { diagnostics } = readJsonlRecords(bytes, "rho-jsonl", file, (record, line) => {
    record.object("a session record object with a type");
    const type = record.field("type");
    if (header === undefined || tree === undefined) {
      if (type.raw !== "session") type.fail('"session" (the first record is the session header)');
      header = parseHeader(record);
      tree = new RhoSessionTree(header);
      return;
    }
    tree.apply(record, starts[line - 1] ?? 0);
  });
  if (header === undefined || tree === undefined) {
    const torn = diagnostics[0];
    const found = torn ? "only an interrupted (unterminated, invalid) first line" : "an empty file";
    throw formatError({ format: "rho-jsonl", file, line: torn?.line ?? 1 }, found, "a session header");
  }
  const { state: final, summary } = tree.branch(options.branch);
  const { system, messages } = rhoEntriesToMessages(final.entries, (i) => final.stamps[i]!);
  const session: PortableSession = {
    sourceId: header.id,
    ...rhoTitleField(final.metadata),
    createdAt: header.createdAt,
    updatedAt: final.updatedAt,
    cwd: header.cwd,
    revision: final.revision,
    ...(system !== undefined ? { system } : {}),
    messages,
    ...(final.provider ? { provider: { ...final.provider } } : {}),
    ...(final.compaction ? { compaction: final.compaction } : {}),
    ...(Object.keys(final.metadata).length > 0 ? { metadata: final.metadata } : {}),
    ...(final.promptCacheKey !== undefined ? { promptCacheKey: final.promptCacheKey } : {}),
    format: `rho-jsonl-v${tree.effectiveVersion}`,
  };
  return { session, diagnostics, ...(summary ? { tree: summary } : {}) };
}

/** The byte offset where each line starts (index 0: line 1), as Rho names virtual nodes. */
function lineStarts(bytes: Uint8Array): number[] {
  const starts = [0];
  for (let i = bytes.indexOf(0x0a); i !== -1; i = bytes.indexOf(0x0a, i + 1)) starts.push(i + 1);
  return starts;
}

interface Header {
  readonly version: number;
  readonly id: string;
  readonly createdAt: string;
  readonly cwd: string;
}

function parseHeader(record: Value): Header {
  const version = record.field("version");
  const number = version.count();
  if (!(RHO_JSONL_VERSIONS as readonly number[]).includes(number)) {
    throw unsupportedVersion(
      { format: "rho-jsonl", file: version.site.file, line: version.site.lineOf(version.path), path: pathText(version.path) },
      number,
      RHO_JSONL_VERSIONS,
    );
  }
  return {
    version: number,
    id: record.field("id").string({ nonEmpty: true }),
    createdAt: flexibleTimestamp(record.field("timestamp")),
    cwd: record.field("cwd").string(),
  };
}
