/**
 * What recovery and verification found in a session's files, in the shape the CLI prints.
 *
 * @module
 */

/** Codes of the diagnostics (docs/CLI.md). */
export type DiagnosticCode =
  | "truncated_tail"
  | "invalid_json"
  | "invalid_record"
  | "oversized_line"
  | "unknown_record"
  | "overlap_removed"
  | "stale_draft"
  | "missing_meta"
  | "meta_rebuilt"
  | "invalid_segment"
  | "unexpected_file"
  /** An import took a time its source left out from the source's messages (or the import time). */
  | "time_from_messages";

/** One finding, located by file (relative to the session folder) and 1-based line. */
export interface Diagnostic {
  /** Path relative to the session folder, e.g. `messages/active.jsonl`. */
  readonly file: string;
  /** 1-based line number, or `null` when the finding is not about one line. */
  readonly line: number | null;
  readonly code: DiagnosticCode;
  readonly message: string;
  /** A fatal diagnostic blocks every write to the session. */
  readonly fatal: boolean;
}

/**
 * `FILE:LINE` (or `FILE`) as the CLI writes a location.
 *
 * @example
 * ```ts
 * formatLocation({ file: "messages/active.jsonl", line: 3 }); // "messages/active.jsonl:3"
 * ```
 */
export function formatLocation(diagnostic: Pick<Diagnostic, "file" | "line">): string {
  return diagnostic.line === null ? diagnostic.file : `${diagnostic.file}:${diagnostic.line}`;
}
