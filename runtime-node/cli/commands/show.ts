/**
 * `show REF`: what is stored and what recovery found, read-only. Exits 0 whenever
 * `meta.json` can be read, whatever the diagnostics say (docs/CLI.md); a `meta.json` that is
 * not JSON is `corrupt` (exit 4). An unknown schema version is shown as found, with an
 * `unsupported_schema` diagnostic, and nothing else is interpreted.
 *
 * @module
 */
import { CorruptSessionError, NotFoundError, StoreEntryError, UnsupportedSchemaError } from "../../../core/errors.ts";
import {
  formatSessionRef,
  LAST_RECORD_WINDOW,
  lockDiagnostics,
  type MessagePart,
  parseMetaJson,
  readMany,
  readSegmentFooter,
  readSessionState,
  segmentFooterInTail,
  segmentRanges,
  type SessionMeta,
  sessionPaths,
  type SessionPlace,
  type SessionRef,
  type SessionState,
  type StoragePort,
  unsafeEntry,
  unsupportedSchema,
  withPrefetchedTail,
} from "../../../core/reader.ts";
import { type Command, refArg } from "../command.ts";
import { type CliDiagnostic, counted, diagnosticLines } from "../format.ts";
import { escapeControls } from "../io.ts";
import { exists, explainOpenError } from "../store.ts";

/**
 * Segment footers read per `readMany` call: 16 tails of 4 KiB at most, 64 KiB held at once. A call's tails
 * stay in memory until its batch is judged, and memory a process has not touched before costs a page fault
 * per 4 KiB (~12 µs each on the bench's virtual machine); a small batch's buffer is freed and its memory
 * reused by later batches. Each call checks the session's folders once (docs/decisions.md "show's footers
 * in batches of 16").
 */
const FOOTER_BATCH = 16;

/** The `--json` result of `show` (docs/CLI.md). */
export interface ShowReport {
  readonly meta: SessionMeta | Record<string, unknown>;
  readonly segments: { start: number; end: number; summary_chars: number | null }[];
  readonly active: { count: number; first_sequence: number | null; last_sequence: number | null };
  readonly draft: null | { message_id: string; sequence: number; parts: MessagePart[] };
  readonly diagnostics: CliDiagnostic[];
}

/** `sessionfold show`: what is stored and what recovery found (read-only). Its `help` says what it prints. */
export const show: Command = {
  help: [
    "Shows a session (live, else archived): its meta.json, its segments with the length of",
    "each summary footer, the Active window, a live draft, and every diagnostic recovery",
    "found on open. Exits 0 whenever meta.json can be read. Read-only.",
    '--json: {"meta","segments":[{"start","end","summary_chars"}],',
    '         "active":{"count","first_sequence","last_sequence"},',
    '         "draft":null|{"message_id","sequence","parts"},"diagnostics":[…]}',
  ].join("\n"),
  spec: { positionals: ["REF"], options: {} },
  async run({ store, out, args }) {
    const ref = refArg(args);
    const { storage } = await store.holdingStorage(ref);
    const { report, place } = await showSession(storage, ref).catch(async (error: unknown) => {
      throw await explainOpenError(storage, ref, error);
    });
    return out.result(report, () => showText(ref, place, report));
  },
};

/**
 * Builds the `show` report of a session. Reads `meta.json`, what an open reads (as
 * `Sessions.open` reads it, without a handle: `show` loads none of the writers), and the tail
 * of every segment (for its footer); writes nothing.
 *
 * @throws {NotFoundError} when there is no such session, live or archived.
 * @throws {CorruptSessionError} when `meta.json` is not JSON.
 */
async function showSession(storage: StoragePort, ref: SessionRef): Promise<{ report: ShowReport; place: SessionPlace }> {
  const place: SessionPlace | undefined = (await exists(storage, ref, false)) ? "live" : (await exists(storage, ref, true)) ? "archived" : undefined;
  if (!place) throw new NotFoundError(`no session ${formatSessionRef(ref)}`, { ref: formatSessionRef(ref) });
  const paths = sessionPaths(ref, place);
  const metaBytes = await storage.read(paths.meta);
  let readableMeta: SessionMeta | undefined;
  if (metaBytes) {
    try {
      readableMeta = parseMetaJson(metaBytes, "meta.json");
    } catch (error) {
      if (error instanceof UnsupportedSchemaError) {
        const raw = JSON.parse(new TextDecoder().decode(metaBytes)) as Record<string, unknown>;
        const report: ShowReport = {
          meta: raw,
          segments: [],
          active: { count: 0, first_sequence: null, last_sequence: null },
          draft: null,
          diagnostics: [unsupportedSchema(error)],
        };
        return { report, place };
      }
      if (error instanceof CorruptSessionError && error.details["code"] !== "invalid_record") {
        throw new CorruptSessionError(`${formatSessionRef(ref)}: ${error.message}`, { ref: formatSessionRef(ref), file: "meta.json", line: null });
      }
      // A readable meta.json that fails its schema is shown through the open's diagnostics.
    }
  }
  let state: SessionState;
  try {
    state = await readSessionState(storage, ref, place, paths, Date.now);
  } catch (error) {
    // docs/CLI.md: show exits 0 whenever meta.json can be read; what the open refused is a diagnostic.
    if (!(error instanceof StoreEntryError) || !readableMeta) throw error;
    return { report: refusedOpenReport(readableMeta, unsafeEntry(error, paths)), place };
  }
  const diagnostics: CliDiagnostic[] = [...state.diagnostics];
  const segments: ShowReport["segments"] = [];
  const newest = state.newest;
  const ranges = await segmentRanges({ storage, paths, state });
  for (let from = 0; from < ranges.length; from += FOOTER_BATCH) {
    // The footers' tails in one readMany per batch (a file store checks the session's folders
    // once per call, not once per segment); a footer longer than the tail is read again whole.
    const batch = ranges.slice(from, from + FOOTER_BATCH);
    const tails = await readMany(storage, batch.map((range) => ({ path: paths.segment(range), tailBytes: LAST_RECORD_WINDOW })));
    for (const [i, range] of batch.entries()) {
      if (range.end === newest?.end) {
        // Open read this footer already (and reported it when it is wrong).
        segments.push({ start: range.start, end: range.end, summary_chars: state.footer?.text.length ?? null });
        continue;
      }
      // Judged from the tail already read; read again only when its last line is longer.
      const found = tails[i];
      const tail = (found && segmentFooterInTail(found, paths, range)) ?? (await readSegmentFooter(withPrefetchedTail(storage, found), paths, range));
      diagnostics.push(...(tail?.diagnostics ?? []));
      const footer = tail?.footer;
      segments.push({ start: range.start, end: range.end, summary_chars: footer?.text.length ?? null });
    }
  }
  diagnostics.push(...(await lockDiagnostics(storage, paths)));
  const active = state.active;
  const draft = state.draft;
  const report: ShowReport = {
    meta: state.meta,
    segments,
    active: { count: active.length, first_sequence: active[0]?.sequence ?? null, last_sequence: active.at(-1)?.sequence ?? null },
    draft: draft ? { message_id: draft.record.message_id, sequence: draft.record.sequence, parts: draft.record.parts } : null,
    diagnostics,
  };
  return { report, place };
}

/** The report when the open refused an entry (a link, a file over the limit…): meta.json as read, nothing else interpreted. */
function refusedOpenReport(meta: SessionMeta, diagnostic: CliDiagnostic): ShowReport {
  return { meta, segments: [], active: { count: 0, first_sequence: null, last_sequence: null }, draft: null, diagnostics: [diagnostic] };
}

function showText(ref: SessionRef, place: SessionPlace, report: ShowReport): string {
  const meta = report.meta as Partial<SessionMeta>;
  const title = meta.title ? `  "${escapeControls(meta.title, { oneLine: true })}"` : "";
  const lines = [`${formatSessionRef(ref)}${title}${place === "archived" ? "  (archived)" : ""}`];
  if (meta.schema_version !== 1) {
    lines.push(`meta: schema_version ${JSON.stringify(meta.schema_version)} is not supported; nothing else is read`);
  } else {
    lines.push(
      `meta: revision ${meta.revision}, ${counted(meta.message_count!, "message")}, ${
        counted(meta.history_bytes!, "history byte")
      }, updated ${meta.updated_at}`,
    );
    if (meta.model_label) lines.push(`model: ${escapeControls(meta.model_label, { oneLine: true })}`);
    if (meta.forked_from) lines.push(`forked from: ${meta.forked_from.session_id} through #${meta.forked_from.through_sequence}`);
    lines.push(`segments: ${report.segments.length === 0 ? "none" : report.segments.length}`);
    for (const s of report.segments) lines.push(`  ${s.start}-${s.end}  summary ${s.summary_chars === null ? "missing" : counted(s.summary_chars, "char")}`);
    const a = report.active;
    lines.push(`active: ${counted(a.count, "message")}${a.count > 0 ? ` (#${a.first_sequence}-#${a.last_sequence})` : ""}`);
    const d = report.draft;
    lines.push(`draft: ${d ? `${d.message_id} at sequence ${d.sequence} with ${counted(d.parts.length, "part")}` : "none"}`);
  }
  lines.push(`diagnostics: ${report.diagnostics.length === 0 ? "none" : report.diagnostics.length}`);
  lines.push(...diagnosticLines(report.diagnostics));
  return lines.join("\n");
}
