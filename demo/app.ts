/**
 * The playground's state and actions. `App` owns the {@linkcode PlaygroundState}, performs
 * every action through the core's public API, follows the session worker (commits and
 * writer locks of other tabs) and the URL, and tells its {@linkcode AppView} which regions
 * to render again. It draws nothing itself: the views under views/ render from `state` and
 * call the actions.
 */
import { CancelledError, ContextOverflowError, CorruptSessionError, ProviderError, RevisionConflictError, SessionBusyError, WriterLockedError, type CompactionOutcome, type RunEvent, type SegmentRange, type Session } from "../core/mod.ts";
import { newId } from "../core/internal.ts";
import type { BrowserSessions } from "../runtime-browser/mod.ts";
import { AGENT_ID, DEFAULT_AGENT_TEXT, WORKSPACE_ID, checkSettings, saveSettingsText, type CheckedSettings } from "./agent-settings.ts";
import { describeError, ownerName } from "./describe.ts";
import { formatNumber } from "./dom.ts";
import { applyRunEvent, startLiveRun, type LiveRun } from "./live-run.ts";
import { LocalModel } from "./local-model.ts";
import { prepareDownload, readImportFile, type ExportFormat, type PreparedDownload } from "./portable-io.ts";
import { ProviderChoice, type EndpointProvider } from "./provider-choice.ts";
import { ALL_REGIONS, type LoadedSegment, type Notice, type PlaygroundState, type Region } from "./state.ts";
import { demoTools } from "./tools.ts";

/** What the App asks of the page: regions to render from its state, and the few moments that are not state. */
export interface AppView {
  /** These regions show state that changed: render them again. */
  render(regions: readonly Region[]): void;
  /** Scrolls the conversation to its newest message. */
  scrollToEnd(): void;
  /** A turn started: the composer's box empties. */
  turnStarted(): void;
  /** A turn ended; with `restore`, its `text` goes back into the box if the box is still empty. */
  turnEnded(text: string, restore: boolean): void;
  /** Moves the focus to the composer (a new session waits for its first message). */
  focusComposer(): void;
  /** Shows a short note for a few seconds. */
  toast(text: string, kind?: "info" | "warn" | "error"): void;
  /** Resolves `true` when the user confirms `text`. */
  confirm(text: string): Promise<boolean>;
}

/** Options of {@linkcode App}. */
export interface AppOptions {
  /** The local model's first streaming speed, in milliseconds per chunk. */
  readonly chunkDelayMs: number;
}

/** The export choices of the Export dialog. */
export interface ExportChoice {
  readonly format: ExportFormat;
  readonly redact: boolean;
  readonly dropSystemPrompt: boolean;
}

/** The playground's state and actions. */
export class App {
  readonly browser: BrowserSessions;
  /** The local model's streaming speed, read at each chunk (the Model tab and the tests change it). */
  chunkDelayMs: number;
  readonly providers: ProviderChoice;
  readonly #state: PlaygroundState;
  /** Set by {@linkcode App.start}, before any action can run. */
  #view!: AppView;
  #listTimer: ReturnType<typeof setTimeout> | undefined;
  #pollBusy = false;

  constructor(browser: BrowserSessions, settingsText: string, options: AppOptions) {
    this.browser = browser;
    this.chunkDelayMs = options.chunkDelayMs;
    this.providers = new ProviderChoice(new LocalModel({ contextWindow: () => this.#state.config.context_window ?? 2000, chunkDelayMs: () => this.chunkDelayMs }));
    const checked = checkSettings(settingsText);
    const used = checked.ok ? checked : defaultSettings();
    this.#state = {
      settingsText,
      config: used.config,
      options: used.options,
      session: undefined,
      archived: false,
      older: [],
      run: undefined,
      busy: undefined,
      remoteOwner: undefined,
      notices: checked.ok ? [] : [{ id: "settings", kind: "error", title: "The stored agent settings are not valid; the defaults are used until you fix them.", body: checked.summary }],
      diagnosticsSeen: undefined,
      metas: [],
      archivedMetas: [],
    };
  }

  /** What the views render from; only the actions below change it. */
  get state(): Readonly<PlaygroundState> {
    return this.#state;
  }

  /**
   * The older segments paged into the chat. They must reach the Active window: a compaction
   * since then closed a newer segment in between, so paging starts again rather than show a gap.
   */
  get pagedSegments(): readonly LoadedSegment[] {
    const older = this.#state.older;
    return older.length > 0 && older.at(-1)!.range.end !== this.#state.session?.newestSegment?.end ? [] : older;
  }

  /** The closed segments older than what the chat shows, oldest first. */
  get unpagedSegments(): readonly SegmentRange[] {
    const session = this.#state.session;
    if (!session) return [];
    const shownFrom = this.#shownFrom(session);
    return (session.listedSegments ?? []).filter((s) => s.end < shownFrom);
  }

  /** The sequence of the oldest message the chat shows (or would show next, in an empty Active window). */
  #shownFrom(session: Session): number {
    return this.pagedSegments[0]?.range.start ?? session.active[0]?.sequence ?? (session.newestSegment?.end ?? 0) + 1;
  }

  /** Renders everything, then follows the worker, the other tabs and the URL, and opens the session the URL names (or the newest). */
  async start(view: AppView): Promise<void> {
    this.#view = view;
    // A notice from the constructor (invalid stored settings) shows at once.
    this.#render("banners");
    this.browser.onCommit((event) => void this.#onRemoteCommit(event.ref, event.revision));
    setInterval(() => void this.#pollOwnership(), 1000);
    window.addEventListener("hashchange", () => void this.#openFromHash());
    await this.#refreshList();
    await this.#openFromHash(true);
  }

  // ————————————————————————————————————————— sessions

  /** Opens a session of the list (unless a turn or an action of this tab is running). */
  async openSession(sessionId: string, archived: boolean): Promise<void> {
    const state = this.#state;
    if (state.run || state.busy) return;
    try {
      state.session = await withSegments(await this.browser.sessions.open(sessionRef(sessionId), { ...state.options, archived }));
      state.archived = archived;
    } catch (error) {
      state.session = undefined;
      this.#notify({ id: "open", kind: "error", title: `Could not open ${sessionId}.`, body: describeError(error) });
      history.replaceState(null, "", location.pathname + location.search);
      this.#render(...ALL_REGIONS);
      return;
    }
    state.older = [];
    state.remoteOwner = undefined;
    // Notices about the previous session go with it.
    state.notices = state.notices.filter((n) => n.id === "settings" || n.id === "list");
    this.#setHash();
    this.#render(...ALL_REGIONS);
    this.#view.scrollToEnd();
    await this.#pollOwnership();
  }

  /** Shows an empty session, which the first message creates. */
  newSession(): void {
    const state = this.#state;
    if (state.run) return;
    state.session = undefined;
    state.archived = false;
    state.older = [];
    state.remoteOwner = undefined;
    state.notices = state.notices.filter((n) => n.id === "settings");
    this.#setHash();
    this.#render(...ALL_REGIONS);
    this.#view.focusComposer();
  }

  /** Pages in the next older segment; `true` when the chat shows it now. */
  async loadEarlier(): Promise<boolean> {
    const session = this.#state.session;
    if (!session) return false;
    const before = this.#shownFrom(session);
    const range = this.unpagedSegments.at(-1);
    if (!range) return false;
    try {
      // One segment per page: exactly what `messages({ beforeSequence })` reads.
      const messages = await session.messages({ beforeSequence: before });
      this.#state.older = [{ range, messages }, ...this.pagedSegments];
    } catch (error) {
      this.#notify({ id: "page", kind: "error", title: "Could not load earlier messages.", body: describeError(error) });
      return false;
    }
    this.#render("messages");
    return true;
  }

  async #refreshList(): Promise<void> {
    const problems: string[] = [];
    const onProblem = (p: { ref: string; message: string }) => problems.push(`${p.ref}: ${p.message}`);
    this.#state.metas = await this.browser.sessions.list({ agentId: AGENT_ID, workspaceId: WORKSPACE_ID, onProblem });
    this.#state.archivedMetas = await this.browser.sessions.list({ agentId: AGENT_ID, workspaceId: WORKSPACE_ID, archived: true, onProblem });
    if (problems.length > 0) this.#notify({ id: "list", kind: "warn", title: "Some sessions could not be listed.", items: problems });
    this.#render("list");
  }

  /** Refreshes the session list once a burst of commits is over. */
  #scheduleListRefresh(): void {
    clearTimeout(this.#listTimer);
    this.#listTimer = setTimeout(() => void this.#refreshList().catch(() => undefined), 150);
  }

  async #openFromHash(initial = false): Promise<void> {
    const match = /^#\/(archived\/)?([A-Za-z0-9_.-]+)$/.exec(location.hash);
    if (match) {
      const archived = match[1] !== undefined;
      if (this.#state.session && this.#state.session.ref.sessionId === match[2] && this.#state.archived === archived) return;
      await this.openSession(match[2]!, archived);
      return;
    }
    const newest = this.#state.metas[0];
    if (initial && newest) await this.openSession(newest.session_id, false);
    else this.newSession();
  }

  /** Re-opens the current session with the current settings. */
  async #reopen(): Promise<void> {
    const state = this.#state;
    if (!state.session) return;
    state.session = await withSegments(await this.browser.sessions.open(state.session.ref, { ...state.options, archived: state.archived }));
    this.#render(...ALL_REGIONS);
  }

  #setHash(): void {
    const { session, archived } = this.#state;
    const hash = session ? `#/${archived ? "archived/" : ""}${session.ref.sessionId}` : "";
    if (location.hash !== hash) history.replaceState(null, "", `${location.pathname}${location.search}${hash}`);
  }

  // ————————————————————————————————————————— the turn

  /** Sends `raw` as the next user message (creating the session first if it is new) and streams the turn. */
  async send(raw: string): Promise<void> {
    const state = this.#state;
    const text = raw.trim();
    if (text === "" || state.run || state.busy || state.archived) return;
    if (!state.session) {
      try {
        const title = text.replace(/\s+/g, " ").slice(0, 60);
        state.session = await this.browser.sessions.create(
          { agentId: AGENT_ID, workspaceId: WORKSPACE_ID, sessionId: newId("s"), title, ...(state.config.model_label ? { modelLabel: state.config.model_label } : {}), timezone: Intl.DateTimeFormat().resolvedOptions().timeZone },
          state.options,
        );
        state.archived = false;
        this.#setHash();
        await this.#refreshList();
      } catch (error) {
        this.#notify({ id: "send", kind: "error", title: "Could not create the session.", body: describeError(error) });
        return;
      }
    }
    const session = state.session;
    const run = startLiveRun(text);
    state.run = run;
    this.#view.turnStarted();
    this.dismiss("send");
    this.dismiss("locked");
    this.#render(...ALL_REGIONS);
    this.#view.scrollToEnd();
    let restore = false;
    try {
      const handle = session.run(text, { provider: this.providers.current, tools: demoTools, signal: run.controller.signal, onEvent: (event) => this.#onRunEvent(run, event) });
      await handle.result;
    } catch (error) {
      restore = this.#reportRunError(error);
    } finally {
      state.run = undefined;
      this.#view.turnEnded(text, restore);
      this.#render(...ALL_REGIONS);
      this.#view.scrollToEnd();
      this.#scheduleListRefresh();
    }
  }

  /** Stops this tab's turn; the core commits the partial reply as stopped. */
  stopTurn(): void {
    this.#state.run?.controller.abort();
  }

  /** Shows what a failed run means; `true` when the text should go back into the box. */
  #reportRunError(error: unknown): boolean {
    const state = this.#state;
    if (error instanceof CancelledError) {
      this.#view.toast(`Stopped. The partial reply is kept as “stopped” (revision ${error.revision ?? "?"}).`);
      return false;
    }
    if (error instanceof WriterLockedError) {
      state.remoteOwner = error.owner ?? state.remoteOwner;
      this.#notify({
        id: "locked",
        kind: "warn",
        title: `Not sent: ${ownerName(error.owner)} is writing this session (WriterLockedError).`,
        body: "Nothing was written. This tab follows that tab's commits; send again when it has finished. Your message is still in the box.",
      });
      return true;
    }
    if (error instanceof RevisionConflictError) {
      this.#notify({ id: "send", kind: "warn", title: "Another tab committed to this session first (RevisionConflictError).", body: "This view was reloaded; nothing of your message was written. Send it again." });
      if (state.session) void withSegments(state.session, true).then(() => this.#render(...ALL_REGIONS));
      return true;
    }
    if (error instanceof SessionBusyError) {
      this.#notify({ id: "send", kind: "warn", title: "This session is busy in this tab.", body: error.message });
      return true;
    }
    if (error instanceof ProviderError || error instanceof ContextOverflowError) {
      this.#notify({ id: "send", kind: "error", title: "The model failed; nothing of this turn was committed.", body: error.message });
      return true;
    }
    if (error instanceof CorruptSessionError) {
      this.#notify({ id: "send", kind: "error", title: "This session is read-only until it is repaired.", body: error.message });
      return true;
    }
    this.#notify({ id: "send", kind: "error", title: "The turn failed.", body: describeError(error) });
    return true;
  }

  #onRunEvent(run: LiveRun, event: RunEvent): void {
    applyRunEvent(run, event, this.providers.current.identity);
    switch (event.type) {
      case "usage":
      case "compaction-started":
        this.#render("panel", "live");
        return;
      case "compaction-completed":
        this.#onCompacted(event.outcome, true);
        return;
      case "compaction-failed":
        this.#view.toast(`Compaction failed, nothing changed: ${event.message}`, "error");
        this.#render("panel");
        return;
      case "context-folded":
        this.#view.toast(`The model refused the input as too long; it was folded in memory (depth ${event.depth}, ${event.droppedMessages} messages left out of this request).`, "warn");
        return;
      case "committed":
        // A recovered draft committed first (its own commit) or the turn's final commit.
        this.#render("messages", "panel", "header");
        return;
      default:
        this.#render("live");
    }
  }

  #onCompacted(outcome: CompactionOutcome, automatic: boolean): void {
    this.#view.toast(
      `${automatic ? "Compacted automatically" : "Compacted"}: messages #${outcome.segment.start}–#${outcome.segment.end} are now a segment; ≈${formatNumber(outcome.beforeTokens)} → ≈${formatNumber(outcome.afterTokens)} tokens.`,
    );
    this.#render("messages", "panel", "header");
    this.#scheduleListRefresh();
  }

  // ————————————————————————————————————————— session actions

  /** Folds the oldest half of the Active window into a segment now. */
  async compactNow(): Promise<void> {
    const session = this.#state.session;
    if (!session) return;
    await this.#guard("compact", async () => {
      const outcome = await session.compact();
      if (outcome.segment === null) this.#view.toast("Nothing to compact: the Active window holds fewer than 2 messages.");
      else this.#onCompacted(outcome as CompactionOutcome, false);
    });
  }

  /** Commits the recovered draft as stopped. */
  async finishDraft(): Promise<void> {
    const session = this.#state.session;
    if (!session) return;
    await this.#guard("finish the draft", async () => {
      const result = await session.finishDraft();
      this.#view.toast(result ? `The interrupted reply was committed as “stopped” (revision ${result.revision}).` : "There was no draft to finish.");
      this.#scheduleListRefresh();
    });
  }

  /** Copies the whole history into a new session and opens it. */
  async forkSession(): Promise<void> {
    const session = this.#state.session;
    if (!session || this.#state.archived) return;
    const forked = await this.#guard("fork", async () => {
      const id = newId("s");
      await this.browser.sessions.fork(session.ref, id);
      return id;
    });
    if (!forked) return;
    await this.#refreshList();
    await this.openSession(forked, false);
    this.#view.toast("Forked: this copy has the whole history and grows on its own.");
  }

  /** Moves the open session to the archive (read-only) and shows it there. */
  async archiveSession(): Promise<void> {
    const session = this.#state.session;
    if (!session || this.#state.archived) return;
    const done = await this.#guard("archive", async () => {
      await this.browser.sessions.archive(session.ref);
      return true;
    });
    if (!done) return;
    this.#view.toast("Archived. It is read-only now; find it under Archived.");
    await this.#refreshList();
    await this.openSession(session.ref.sessionId, true);
  }

  /** Deletes the open session once the user confirms, then opens the newest one left. */
  async deleteSession(): Promise<void> {
    const session = this.#state.session;
    if (!session) return;
    const title = session.meta.title ?? session.ref.sessionId;
    if (!(await this.#view.confirm(`Delete “${title}” and its whole history? This cannot be undone.`))) return;
    const archived = this.#state.archived;
    const done = await this.#guard("delete", async () => {
      await this.browser.sessions.delete(session.ref, { archived });
      return true;
    });
    if (!done) return;
    this.#view.toast(`Deleted “${title}”.`);
    this.#state.session = undefined;
    await this.#refreshList();
    const newest = this.#state.metas[0];
    if (newest) await this.openSession(newest.session_id, false);
    else this.newSession();
  }

  /** Imports a DeepCode, Rho, Codex, Claude Code or pi file as a new session and opens it. */
  async importFile(file: File): Promise<void> {
    const bytes = new Uint8Array(await file.arrayBuffer());
    const imported = await this.#guard("import the file", async () => {
      const read = await readImportFile(file.name, bytes);
      const id = newId("s");
      const portable = read.session.title ? read.session : { ...read.session, title: file.name };
      await this.browser.sessions.importPortable(sessionRef(id), portable);
      return { id, read };
    });
    if (!imported) return;
    await this.#refreshList();
    await this.openSession(imported.id, false);
    const { read } = imported;
    this.#view.toast(`Imported ${read.session.messages.length} messages from a ${read.format} file.`);
    if (read.diagnostics.length > 0) {
      this.#notify({
        id: "import",
        kind: "warn",
        title: `The ${read.format} file was imported with ${read.diagnostics.length} finding${read.diagnostics.length === 1 ? "" : "s"}.`,
        items: read.diagnostics.map((d) => `${d.code} — ${d.file}${d.line === null ? "" : `:${d.line}`}: ${d.message}`),
      });
    }
  }

  /** The open session as a file with the export choices applied, and how many messages it holds; `undefined` without a session. */
  async exportSession(choice: ExportChoice): Promise<{ file: PreparedDownload; messageCount: number } | undefined> {
    const session = this.#state.session;
    if (!session) return undefined;
    const portable = await session.exportPortable();
    return { file: prepareDownload(portable, choice), messageCount: portable.messages.length };
  }

  /** Runs a mutating action of this tab with its errors shown. */
  async #guard<T>(what: string, fn: () => Promise<T>): Promise<T | undefined> {
    const state = this.#state;
    if (state.busy || state.run) return undefined;
    state.busy = what;
    this.#render("header");
    try {
      return await fn();
    } catch (error) {
      if (error instanceof WriterLockedError) {
        this.#notify({ id: "locked", kind: "warn", title: `Could not ${what}: ${ownerName(error.owner)} is writing this session (WriterLockedError).`, body: "Nothing was changed. Try again when it has finished." });
      } else if (error instanceof RevisionConflictError) {
        if (state.session) await withSegments(state.session, true).catch(() => undefined);
        this.#notify({ id: "action", kind: "warn", title: `Could not ${what}: another tab changed this session first.`, body: "This view was reloaded; try again." });
      } else {
        this.#notify({ id: "action", kind: "error", title: `Could not ${what}.`, body: describeError(error) });
      }
      return undefined;
    } finally {
      state.busy = undefined;
      this.#render(...ALL_REGIONS);
    }
  }

  // ————————————————————————————————————————— settings and model

  /** Checks the agent file's `text` and, when valid, stores it and applies it to every session from now on. */
  async saveSettings(text: string): Promise<CheckedSettings> {
    const checked = checkSettings(text);
    if (!checked.ok) return checked;
    await this.#guard("save settings", async () => {
      await saveSettingsText(this.browser.storage, text);
      this.#state.settingsText = text;
      this.#state.config = checked.config;
      this.#state.options = checked.options;
      if (this.#state.session) await this.#reopen();
      this.#view.toast("Agent settings saved. They apply to every session from now on.");
    });
    return checked;
  }

  /** Streams the next turns from an endpoint provider the Model tab built. */
  useEndpoint(provider: EndpointProvider): void {
    this.providers.useEndpoint(provider);
    this.#render("composer", "panel");
  }

  /** Streams the next turns from the built-in local model again. */
  useLocalModel(): void {
    this.providers.useLocal();
    this.#render("composer", "panel");
  }

  // ————————————————————————————————————————— other tabs

  async #onRemoteCommit(ref: string, revision: number): Promise<void> {
    this.#scheduleListRefresh();
    const { session, run, busy, archived } = this.#state;
    if (!session || run || busy || archived) return;
    if (ref !== sessionRef(session.ref.sessionId) || revision <= session.revision) return;
    await withSegments(session, true).catch(() => undefined);
    this.#render(...ALL_REGIONS);
    this.#view.scrollToEnd();
  }

  /** Whether another tab holds the session's writer lock; while it does, follow its draft. */
  async #pollOwnership(): Promise<void> {
    const state = this.#state;
    const session = state.session;
    if (!session || state.run || state.busy || state.archived || this.#pollBusy || document.visibilityState !== "visible") return;
    this.#pollBusy = true;
    try {
      const owner = await this.browser.heldBy(session);
      if (state.run || state.busy || session !== state.session) return;
      if (owner) {
        state.remoteOwner = owner;
        await withSegments(session, true);
        this.#render(...ALL_REGIONS);
        this.#view.scrollToEnd();
      } else if (state.remoteOwner) {
        state.remoteOwner = undefined;
        this.dismiss("locked");
        await withSegments(session, true);
        this.#render(...ALL_REGIONS);
        this.#view.scrollToEnd();
      }
    } catch {
      // Polling is best effort; the next tick tries again.
    } finally {
      this.#pollBusy = false;
    }
  }

  // ————————————————————————————————————————— notices

  /** Hides the notice `id`. */
  dismiss(id: string): void {
    const before = this.#state.notices.length;
    this.#state.notices = this.#state.notices.filter((n) => n.id !== id);
    if (this.#state.notices.length !== before) this.#render("banners");
  }

  /** Hides the recovery findings of `session` until it is opened again. */
  dismissDiagnostics(session: Session): void {
    this.#state.diagnosticsSeen = session;
    this.#render("banners");
  }

  #notify(notice: Notice): void {
    this.#state.notices = [...this.#state.notices.filter((n) => n.id !== notice.id), notice];
    this.#render("banners");
  }

  #render(...regions: Region[]): void {
    this.#view.render(regions);
  }
}

/** The settings used while the stored agent file is invalid. */
function defaultSettings(): Extract<CheckedSettings, { ok: true }> {
  const checked = checkSettings(DEFAULT_AGENT_TEXT);
  if (!checked.ok) throw new Error("the default agent settings are invalid");
  return checked;
}

/** The playground's reference of a session id. */
function sessionRef(sessionId: string): string {
  return `${AGENT_ID}/${WORKSPACE_ID}/${sessionId}`;
}

/**
 * Lists the session's segments (an open reads only the newest one), so the synchronous render
 * can show them through `listedSegments`; with `reload`, reads the session again first.
 */
async function withSegments(session: Session, reload = false): Promise<Session> {
  if (reload) await session.reload();
  await session.segments();
  return session;
}
