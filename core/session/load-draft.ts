/**
 * The draft file on open (docs/FORMAT.md "Recovery"): the live reply and the run's
 * uncommitted messages, or a diagnostic when it does not parse, or a stale draft (already
 * committed in Active) marked for removal at the next write.
 *
 * @module
 */
import { CorruptSessionError, SessionfoldError } from "../errors.ts";
import type { Diagnostic } from "../jsonl/diagnostic.ts";
import { relativeToSession, type SessionPaths } from "../layout/paths.ts";
import { describeIssues, messageCheck, type MessageRecord, parseDraftJson } from "../schema/records.ts";
import type { LiveDraft, PendingRepairs, Report } from "./state.ts";

/** Extension field of the draft file: the run's uncommitted messages (docs/decisions.md). */
export const PENDING_FIELD = "pending_messages";

/** The live draft in `bytes` (the draft file), checked against the committed `active` messages. */
export function loadDraft(
  bytes: Uint8Array | undefined,
  paths: SessionPaths,
  active: readonly MessageRecord[],
  report: Report,
  repairs: PendingRepairs,
): LiveDraft | undefined {
  const file = relativeToSession(paths, paths.draft);
  if (!bytes) return undefined;
  let draft: LiveDraft;
  try {
    const record = parseDraftJson(bytes, file);
    const rawPending = (record as Record<string, unknown>)[PENDING_FIELD];
    const pending: MessageRecord[] = [];
    for (const [i, value] of (Array.isArray(rawPending) ? rawPending : []).entries()) {
      const parsed = messageCheck.safeParse(value);
      if (!parsed.success) {
        throw new CorruptSessionError(`${file}: ${PENDING_FIELD}[${i}] is not a valid message: ${describeIssues(parsed.error)}`, {
          file,
          line: null,
          code: "invalid_record",
        });
      }
      pending.push(parsed.data);
    }
    const { [PENDING_FIELD]: _pending, ...plain } = record as Record<string, unknown>;
    draft = { record: plain as typeof record, pending };
  } catch (error) {
    if (!(error instanceof SessionfoldError)) throw error;
    report(file, null, (error.details["code"] as Diagnostic["code"]) ?? "invalid_record", true, error.message.replace(`${file}: `, ""));
    return undefined;
  }
  const committed = new Set(active.map((m) => m.message_id));
  if (committed.has(draft.record.message_id) || draft.pending.some((m) => committed.has(m.message_id))) {
    report(file, null, "stale_draft", false, `draft ${draft.record.message_id} is already committed in Active; discarded`);
    repairs.removeStaleDraft = true;
    return undefined;
  }
  return draft;
}
