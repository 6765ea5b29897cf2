/**
 * The two refusals of the commit path before it writes: a session that recovery left
 * read-only (a fatal diagnostic, docs/FORMAT.md "Recovery"), and a revision that moved
 * since this handle read (docs/FORMAT.md "Revisions"); and the error of an operation that
 * failed on its way.
 *
 * @module
 */
import { asSessionfoldError, CorruptSessionError, RevisionConflictError, type SessionfoldError } from "../errors.ts";
import type { Diagnostic } from "../jsonl/diagnostic.ts";
import { formatSessionRef, type SessionRef } from "../layout/ids.ts";
import { isBlocked } from "./state.ts";

/**
 * @throws {CorruptSessionError} naming the first fatal diagnostic's file and line when the
 * session (its state, or an open handle) is read-only until repaired.
 */
export function assertWritable(state: { readonly diagnostics: readonly Diagnostic[] }, ref: SessionRef): void {
  if (!isBlocked(state)) return;
  const first = state.diagnostics.find((d) => d.fatal)!;
  throw new CorruptSessionError(`${formatSessionRef(ref)} is read-only until repaired: ${first.message}`, {
    file: first.file,
    line: first.line,
    diagnostic: first.code,
  });
}

/** The conflict of a revision check: `read` is the revision the check expected, `found` what `meta.json` holds. */
export function revisionConflict(ref: SessionRef, read: number | null, found: number | null): RevisionConflictError {
  // No meta.json where the handle read one: the session was deleted or moved, and a reload would only say so.
  const what = found === null && read !== null
    ? `meta.json is gone (the session was deleted or moved since this handle read revision ${read}); open it again to see where it is`
    : `meta.json is at revision ${found ?? "none"} but this handle read ${read ?? "none"}; another writer committed (reload, then try again)`;
  return new RevisionConflictError(`${formatSessionRef(ref)}: ${what}`, { expected: read, found });
}

/**
 * The typed error of an operation that failed (`context`: what and where), its revision `before` it and `after` the
 * reload that followed. A commit of several writes can fail at a later one with the earlier ones a whole commit (a
 * compaction refused at Active's write, after `meta.json` and the segment: docs/FORMAT.md "Compaction"); the storage's
 * error then says the failed write wrote nothing, and the message adds that the operation took effect.
 */
export function failedOperationError(error: unknown, context: string, before: number, after: number): SessionfoldError {
  const typed = asSessionfoldError(error, context);
  if (after > before && !(error instanceof RevisionConflictError)) {
    typed.message += `; the writes before it took effect: the session is at revision ${after} now (it was at ${before})`;
  }
  return typed;
}
