/**
 * `verify [REF]`: reads every file of one session, or of every session (live and
 * archived), and reports every problem. Exits 1 when any diagnostic is fatal.
 *
 * @module
 */
import {
  formatSessionRef,
  NotFoundError,
  type SessionPlace,
  type SessionRef,
  type StoragePort,
  StoreEntryError,
  type VerifyDiagnostic,
} from "../../../core/mod.ts";
import { unsafeEntry } from "../../../core/reader.ts";
import { type Command, refArg } from "../command.ts";
import { EXIT } from "../exit.ts";
import { counted, diagnosticLines } from "../format.ts";
import { Progress } from "../io.ts";
import { exists, explainOpenError, noSuchSession } from "../store.ts";
import { listStoredSessions, staleCatalogEntries, type StoredSession, type VerifyReport, verifySession } from "../../../core/mod.ts";

/** `sessionfold verify`: check one or every session, reading every file (read-only). Its `help` says what it prints. */
export const verify: Command = {
  help: [
    "Reads every file of the session (or of every session, live and archived) in full:",
    "meta.json, instruction.md, every segment (contiguous, messages in order, the summary",
    "footer last and through the segment's end), active.jsonl and the draft. Exits 1 when",
    "a session has a fatal diagnostic (an unknown schema version is one). Read-only.",
    '--repair-catalog: first rebuilds the catalog `ls` reads (docs/FORMAT.md "The catalog")',
    "from every meta.json, of REF's workspace or of every workspace; the one write verify makes.",
    "A catalog entry that does not say what its meta.json says (or whose session's folder holds",
    "no meta.json) is named on stderr (note stale_catalog); it is not a fatal diagnostic.",
    "With REF, only REF's own entry.",
    "An entry the store refuses (a link, a file where a folder belongs) is a fatal unsafe_entry",
    "diagnostic of its session, or of the store when it lies above every session; the other",
    "sessions are verified all the same.",
    '--json: {"sessions":[{"ref","ok","diagnostics":[…]}]} (archived sessions carry "archived": true),',
    'with a refused entry above every session also "store": {"diagnostics": […]},',
    'with --repair-catalog or stale entries also "catalog": {"rebuilt"?, "stale": [{"ref","archived","reason"}]}',
  ].join("\n"),
  spec: {
    positionals: [],
    optionalPositionals: ["REF"],
    options: { "repair-catalog": { type: "boolean", description: "rebuild the catalog ls reads from every meta.json first" } },
  },
  async run({ store, out, io, args }) {
    const ref = args.positionals.length > 0 ? refArg(args) : undefined;
    const repairCatalog = args.options["repair-catalog"] === true;
    const opened = await store.forReading();
    if (!opened) {
      if (ref) throw noSuchSession(ref, store.root);
      return out.result({ sessions: [] }, () => `no sessions under ${store.root}`);
    }
    const rebuilt = repairCatalog ? await opened.sessions.rebuildCatalog(ref ? { agentId: ref.agentId, workspaceId: ref.workspaceId } : {}) : undefined;
    if (rebuilt !== undefined) out.note(`catalog rebuilt from meta.json: ${counted(rebuilt, "session")}`);
    let targets: StoredSession[];
    // Entries refused above every session (docs/FORMAT.md "The store's boundary"): fatal, reported, never followed.
    const storeDiagnostics: VerifyDiagnostic[] = [];
    if (ref) {
      const place = await placeOf(opened.storage, ref).catch(async (error: unknown) => {
        throw await explainOpenError(opened.storage, ref, error);
      });
      targets = [{ ref, place }];
    } else {
      targets = await listStoredSessions(opened.storage, (error) => storeDiagnostics.push(unsafeEntry(error)));
    }
    const progress = new Progress(io, "verify");
    const reports: VerifyReport[] = [];
    try {
      for (const [i, target] of targets.entries()) {
        reports.push(await verifySession(opened.sessions, target.ref, target.place));
        if (targets.length > 1) progress.update(i + 1, targets.length);
      }
    } finally {
      progress.end();
    }
    // The catalogs `ls` reads, against the files (a stale entry is reported, never fatal); with REF, only REF's entry.
    const stale = await staleCatalogEntries(opened.storage, ref ?? {});
    for (const entry of stale) {
      out.note(`note stale_catalog: ${entry.ref}${entry.archived ? " (archived)" : ""}: ${entry.reason} (sessionfold verify --repair-catalog rebuilds it)`);
    }
    const document = {
      sessions: reports.map((r) => ({ ref: r.ref, ok: r.ok, diagnostics: r.diagnostics, ...(r.place === "archived" ? { archived: true } : {}) })),
      ...(storeDiagnostics.length > 0 ? { store: { diagnostics: storeDiagnostics } } : {}),
      ...(rebuilt !== undefined || stale.length > 0 ? { catalog: { ...(rebuilt !== undefined ? { rebuilt } : {}), stale } } : {}),
    };
    out.result(document, () => verifyText(reports, storeDiagnostics));
    return reports.every((r) => r.ok) && storeDiagnostics.length === 0 ? EXIT.ok : EXIT.fatalDiagnostics;
  },
};

/**
 * Where REF lies: live, else archived. An entry refused on the way (a link, a file where a
 * folder belongs) is verifySession's to report as `unsafe_entry`, so it is verified as live.
 *
 * @throws {NotFoundError} when there is no such session.
 */
async function placeOf(storage: StoragePort, ref: SessionRef): Promise<SessionPlace> {
  for (const archived of [false, true]) {
    try {
      if (await exists(storage, ref, archived)) return archived ? "archived" : "live";
    } catch (error) {
      if (error instanceof StoreEntryError) return archived ? "archived" : "live";
      throw error;
    }
  }
  throw new NotFoundError(`no session ${formatSessionRef(ref)}`, { ref: formatSessionRef(ref) });
}

function verifyText(reports: readonly VerifyReport[], storeDiagnostics: readonly VerifyDiagnostic[]): string {
  if (reports.length === 0 && storeDiagnostics.length === 0) return "no sessions";
  const lines: string[] = [];
  if (storeDiagnostics.length > 0) {
    lines.push("FAIL the store: entries refused above every session (nothing under them is read)");
    lines.push(...diagnosticLines(storeDiagnostics, "     "));
  }
  for (const r of reports) {
    lines.push(`${r.ok ? "ok  " : "FAIL"} ${r.ref}${r.place === "archived" ? " (archived)" : ""}`);
    lines.push(...diagnosticLines(r.diagnostics, "     "));
  }
  const failed = reports.filter((r) => !r.ok).length;
  const refused = storeDiagnostics.length === 0 ? "" : `, ${counted(storeDiagnostics.length, "store entry", "store entries")} refused`;
  lines.push(`${counted(reports.length, "session")} checked, ${failed === 0 ? "all ok" : `${failed} with fatal diagnostics`}${refused}`);
  return lines.join("\n");
}
