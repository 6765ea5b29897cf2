/**
 * Which session the playground shows and how much of it: the session lists, opening a
 * session (from the list or the URL's `#/<id>` and `#/archived/<id>`), a new empty one,
 * and older segments paged into the chat one at a time.
 */
import type { SegmentRange, Session } from "../core/mod.ts";
import type { BrowserSessions } from "../runtime-browser/mod.ts";
import { AGENT_ID, WORKSPACE_ID } from "./agent-settings.ts";
import { describeError } from "./describe.ts";
import type { LoadedSegment } from "./state.ts";
import { type PlaygroundStore, withSegments } from "./store.ts";

/** The playground's reference of a session id. */
export function sessionRef(sessionId: string): string {
  return `${AGENT_ID}/${WORKSPACE_ID}/${sessionId}`;
}

/** Opening and listing sessions, and paging their history. */
export class Navigation {
  readonly #store: PlaygroundStore;
  readonly #browser: BrowserSessions;
  readonly #opened: () => Promise<void>;
  #listTimer: ReturnType<typeof setTimeout> | undefined;

  /** `opened` runs after each session opens (the app then asks whether another tab owns it). */
  constructor(store: PlaygroundStore, browser: BrowserSessions, opened: () => Promise<void>) {
    this.#store = store;
    this.#browser = browser;
    this.#opened = opened;
  }

  /**
   * The older segments paged into the chat. They must reach the Active window: a compaction
   * since then closed a newer segment in between, so paging starts again rather than show a gap.
   */
  get pagedSegments(): readonly LoadedSegment[] {
    const { older, session } = this.#store.state;
    return older.length > 0 && older.at(-1)!.range.end !== session?.newestSegment?.end ? [] : older;
  }

  /** The closed segments older than what the chat shows, oldest first. */
  get unpagedSegments(): readonly SegmentRange[] {
    const session = this.#store.state.session;
    if (!session) return [];
    const shownFrom = this.#shownFrom(session);
    return (session.listedSegments ?? []).filter((s) => s.end < shownFrom);
  }

  /** Opens a session of the list (unless a turn or an action of this tab is running). */
  async openSession(sessionId: string, archived: boolean): Promise<void> {
    const store = this.#store;
    const state = store.state;
    if (state.run || state.busy) return;
    try {
      state.session = await withSegments(await this.#browser.sessions.open(sessionRef(sessionId), { ...state.options, archived }));
      state.archived = archived;
    } catch (error) {
      state.session = undefined;
      store.notify({ id: "open", kind: "error", title: `Could not open ${sessionId}.`, body: describeError(error) });
      history.replaceState(null, "", location.pathname + location.search);
      store.renderAll();
      return;
    }
    state.older = [];
    state.remoteOwner = undefined;
    // Notices about the previous session go with it.
    state.notices = state.notices.filter((n) => n.id === "settings" || n.id === "list");
    this.setHash();
    store.renderAll();
    store.view.scrollToEnd();
    await this.#opened();
  }

  /** Shows an empty session, which the first message creates. */
  newSession(): void {
    const store = this.#store;
    const state = store.state;
    if (state.run) return;
    state.session = undefined;
    state.archived = false;
    state.older = [];
    state.remoteOwner = undefined;
    state.notices = state.notices.filter((n) => n.id === "settings");
    this.setHash();
    store.renderAll();
    store.view.focusComposer();
  }

  /** Opens the session the URL names; without one, the newest session on the first call, else a new one. */
  async openFromHash(initial = false): Promise<void> {
    const state = this.#store.state;
    const match = /^#\/(archived\/)?([A-Za-z0-9_.-]+)$/.exec(location.hash);
    if (match) {
      const archived = match[1] !== undefined;
      if (state.session && state.session.ref.sessionId === match[2] && state.archived === archived) return;
      await this.openSession(match[2]!, archived);
      return;
    }
    const newest = state.metas[0];
    if (initial && newest) await this.openSession(newest.session_id, false);
    else this.newSession();
  }

  /** Re-opens the current session with the current settings. */
  async reopen(): Promise<void> {
    const state = this.#store.state;
    if (!state.session) return;
    state.session = await withSegments(await this.#browser.sessions.open(state.session.ref, { ...state.options, archived: state.archived }));
    this.#store.renderAll();
  }

  /** Puts the open session into the URL (without a history entry). */
  setHash(): void {
    const { session, archived } = this.#store.state;
    const hash = session ? `#/${archived ? "archived/" : ""}${session.ref.sessionId}` : "";
    if (location.hash !== hash) history.replaceState(null, "", `${location.pathname}${location.search}${hash}`);
  }

  /** Pages in the next older segment; `true` when the chat shows it now. */
  async loadEarlier(): Promise<boolean> {
    const session = this.#store.state.session;
    if (!session) return false;
    const before = this.#shownFrom(session);
    const range = this.unpagedSegments.at(-1);
    if (!range) return false;
    try {
      // One segment per page: exactly what `messages({ beforeSequence })` reads.
      const messages = await session.messages({ beforeSequence: before });
      this.#store.state.older = [{ range, messages }, ...this.pagedSegments];
    } catch (error) {
      this.#store.notify({ id: "page", kind: "error", title: "Could not load earlier messages.", body: describeError(error) });
      return false;
    }
    this.#store.render("messages");
    return true;
  }

  /** Reads both session lists again. */
  async refreshList(): Promise<void> {
    const state = this.#store.state;
    const problems: string[] = [];
    const onProblem = (p: { refText: string; message: string }) => problems.push(`${p.refText}: ${p.message}`);
    state.metas = await this.#browser.sessions.list({ agentId: AGENT_ID, workspaceId: WORKSPACE_ID, onProblem });
    state.archivedMetas = await this.#browser.sessions.list({ agentId: AGENT_ID, workspaceId: WORKSPACE_ID, archived: true, onProblem });
    if (problems.length > 0) this.#store.notify({ id: "list", kind: "warn", title: "Some sessions could not be listed.", items: problems });
    this.#store.render("list");
  }

  /** Refreshes the session lists once a burst of commits is over. */
  scheduleListRefresh(): void {
    clearTimeout(this.#listTimer);
    this.#listTimer = setTimeout(() => void this.refreshList().catch(() => undefined), 150);
  }

  /** The sequence of the oldest message the chat shows (or would show next, in an empty Active window). */
  #shownFrom(session: Session): number {
    return this.pagedSegments[0]?.range.start ?? session.active[0]?.sequence ?? (session.newestSegment?.end ?? 0) + 1;
  }
}
