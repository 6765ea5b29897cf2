/**
 * What the header's buttons and the Import / Export dialogs do to sessions: compact now,
 * finish a recovered draft, fork, archive, delete, import a file as a new session, export
 * the open one. Each runs guarded (one action of this tab at a time, errors as notices)
 * and says what it did in a toast.
 */
import type { CompactionOutcome } from "../core/mod.ts";
import { newId } from "../core/internal.ts";
import type { BrowserSessions } from "../runtime-browser/mod.ts";
import { formatNumber } from "./dom.ts";
import { type Navigation, sessionRef } from "./navigation.ts";
import { type ExportFormat, type PreparedDownload, prepareDownload, readImportFile } from "./portable-io.ts";
import type { PlaygroundStore } from "./store.ts";

/** The export choices of the Export dialog. */
export interface ExportChoice {
  readonly format: ExportFormat;
  readonly redact: boolean;
  readonly dropSystemPrompt: boolean;
  /** The folder a DeepCode v1 or pi file records, when given. */
  readonly cwd?: string;
}

/** The actions on whole sessions. */
export class SessionActions {
  readonly #store: PlaygroundStore;
  readonly #browser: BrowserSessions;
  readonly #navigation: Navigation;

  constructor(store: PlaygroundStore, browser: BrowserSessions, navigation: Navigation) {
    this.#store = store;
    this.#browser = browser;
    this.#navigation = navigation;
  }

  /** Folds the oldest half of the Active window into a segment now. */
  async compactNow(): Promise<void> {
    const session = this.#store.state.session;
    if (!session) return;
    await this.#store.guard("compact", async () => {
      const outcome = await session.compact();
      if (outcome.segment === null) this.#store.view.toast("Nothing to compact: the Active window holds fewer than 2 messages.");
      else this.announceCompaction(outcome as CompactionOutcome, false);
    });
  }

  /** Says what a compaction (this action's, or a turn's own) folded, and shows the new segment. */
  announceCompaction(outcome: CompactionOutcome, automatic: boolean): void {
    this.#store.view.toast(
      `${automatic ? "Compacted automatically" : "Compacted"}: messages #${outcome.segment.start}–#${outcome.segment.end} are now a segment; ≈${
        formatNumber(outcome.beforeTokens)
      } → ≈${formatNumber(outcome.afterTokens)} tokens.`,
    );
    this.#store.render("messages", "panel", "header");
    this.#navigation.scheduleListRefresh();
  }

  /** Commits the recovered draft as stopped. */
  async finishDraft(): Promise<void> {
    const session = this.#store.state.session;
    if (!session) return;
    await this.#store.guard("finish the draft", async () => {
      const result = await session.finishDraft();
      this.#store.view.toast(result ? `The interrupted reply was committed as “stopped” (revision ${result.revision}).` : "There was no draft to finish.");
      this.#navigation.scheduleListRefresh();
    });
  }

  /** Copies the whole history into a new session and opens it. */
  async forkSession(): Promise<void> {
    const { session, archived } = this.#store.state;
    if (!session || archived) return;
    const forked = await this.#store.guard("fork", async () => {
      const id = newId("s");
      await this.#browser.sessions.fork(session.ref, id);
      return id;
    });
    if (!forked) return;
    await this.#navigation.refreshList();
    await this.#navigation.openSession(forked, false);
    this.#store.view.toast("Forked: this copy has the whole history and grows on its own.");
  }

  /** Moves the open session to the archive (read-only) and shows it there. */
  async archiveSession(): Promise<void> {
    const { session, archived } = this.#store.state;
    if (!session || archived) return;
    const done = await this.#store.guard("archive", async () => {
      await this.#browser.sessions.archive(session.ref);
      return true;
    });
    if (!done) return;
    this.#store.view.toast("Archived. It is read-only now; find it under Archived.");
    await this.#navigation.refreshList();
    await this.#navigation.openSession(session.ref.sessionId, true);
  }

  /** Deletes the open session once the user confirms, then opens the newest one left. */
  async deleteSession(): Promise<void> {
    const store = this.#store;
    const session = store.state.session;
    if (!session) return;
    const title = session.meta.title ?? session.ref.sessionId;
    if (!(await store.view.confirm(`Delete “${title}” and its whole history? This cannot be undone.`))) return;
    const archived = store.state.archived;
    const done = await store.guard("delete", async () => {
      await this.#browser.sessions.delete(session.ref, { archived });
      return true;
    });
    if (!done) return;
    store.view.toast(`Deleted “${title}”.`);
    store.state.session = undefined;
    await this.#navigation.refreshList();
    const newest = store.state.metas[0];
    if (newest) await this.#navigation.openSession(newest.session_id, false);
    else this.#navigation.newSession();
  }

  /** Imports a DeepCode, Rho, Codex, Claude Code or pi file as a new session and opens it; `opened` is a sealed file's content. */
  async importFile(file: File, opened?: Uint8Array): Promise<void> {
    const bytes = opened ?? new Uint8Array(await file.arrayBuffer());
    const imported = await this.#store.guard("import the file", async () => {
      const read = await readImportFile(file.name, bytes);
      const id = newId("s");
      const portable = read.session.title ? read.session : { ...read.session, title: file.name };
      await this.#browser.sessions.importPortable(sessionRef(id), portable);
      return { id, read };
    });
    if (!imported) return;
    await this.#navigation.refreshList();
    await this.#navigation.openSession(imported.id, false);
    const { read } = imported;
    this.#store.view.toast(`Imported ${read.session.messages.length} messages from a ${read.format} file.`);
    if (read.diagnostics.length > 0) {
      this.#store.notify({
        id: "import",
        kind: "warn",
        title: `The ${read.format} file was imported with ${read.diagnostics.length} finding${read.diagnostics.length === 1 ? "" : "s"}.`,
        items: read.diagnostics.map((d) => `${d.code} — ${d.file}${d.line === null ? "" : `:${d.line}`}: ${d.message}`),
      });
    }
  }

  /** The open session as a file with the export choices applied, and how many messages it holds; `undefined` without a session. */
  async exportSession(choice: ExportChoice): Promise<{ file: PreparedDownload; messageCount: number } | undefined> {
    const session = this.#store.state.session;
    if (!session) return undefined;
    const portable = await session.exportPortable();
    return { file: prepareDownload(portable, choice), messageCount: portable.messages.length };
  }
}
