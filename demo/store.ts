/**
 * The playground's state and its one channel to the page. The parts of the `App`
 * (navigation, the turn, the session actions) change the {@linkcode PlaygroundState} here
 * and then name the regions to render again; notices, toasts and confirmations reach the
 * page the same way, through the {@linkcode AppView} it implements.
 */
import { RevisionConflictError, type Session, WriterLockedError } from "../core/mod.ts";
import { type CheckedSettings, checkSettings, DEFAULT_AGENT_TEXT } from "./agent-settings.ts";
import { describeError, ownerName } from "./describe.ts";
import { ALL_REGIONS, type Notice, type PlaygroundState, type Region } from "./state.ts";

/** What the app asks of the page: regions to render from the state, and the few moments that are not state. */
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

/** The state, the page it renders to, and the helpers every action uses. */
export class PlaygroundStore {
  readonly state: PlaygroundState;
  /** Set by {@linkcode PlaygroundStore.connect} when the app starts, before any action can run. */
  #view!: AppView;

  /** A fresh state with the agent file's `settingsText` (the defaults, with a notice, while it is invalid). */
  constructor(settingsText: string) {
    const checked = checkSettings(settingsText);
    const used = checked.ok ? checked : defaultSettings();
    this.state = {
      settingsText,
      config: used.config,
      options: used.options,
      session: undefined,
      archived: false,
      older: [],
      run: undefined,
      busy: undefined,
      remoteOwner: undefined,
      notices: checked.ok ? [] : [{
        id: "settings",
        kind: "error",
        title: "The stored agent settings are not valid; the defaults are used until you fix them.",
        body: checked.summary,
      }],
      diagnosticsSeen: undefined,
      metas: [],
      archivedMetas: [],
    };
  }

  /** Renders to `view` from now on, starting with the notices already there. */
  connect(view: AppView): void {
    this.#view = view;
    this.render("banners");
  }

  /** The page, for what is not state (scrolling, the composer's box, toasts, confirmations). */
  get view(): AppView {
    return this.#view;
  }

  render(...regions: Region[]): void {
    this.#view.render(regions);
  }

  renderAll(): void {
    this.#view.render(ALL_REGIONS);
  }

  /** Shows `notice`, in place of an earlier one with its id. */
  notify(notice: Notice): void {
    this.state.notices = [...this.state.notices.filter((n) => n.id !== notice.id), notice];
    this.render("banners");
  }

  /** Hides the notice `id`. */
  dismiss(id: string): void {
    const before = this.state.notices.length;
    this.state.notices = this.state.notices.filter((n) => n.id !== id);
    if (this.state.notices.length !== before) this.render("banners");
  }

  /** Hides the recovery findings of `session` until it is opened again. */
  dismissDiagnostics(session: Session): void {
    this.state.diagnosticsSeen = session;
    this.render("banners");
  }

  /**
   * Runs a mutating action of this tab (`what`, as in "Could not …") unless a turn or another
   * action runs, with its errors shown as notices; `undefined` when it did not run or failed.
   */
  async guard<T>(what: string, fn: () => Promise<T>): Promise<T | undefined> {
    const state = this.state;
    if (state.busy || state.run) return undefined;
    state.busy = what;
    this.render("header");
    try {
      return await fn();
    } catch (error) {
      if (error instanceof WriterLockedError) {
        this.notify({
          id: "locked",
          kind: "warn",
          title: `Could not ${what}: ${ownerName(error.owner)} is writing this session (WriterLockedError).`,
          body: "Nothing was changed. Try again when it has finished.",
        });
      } else if (error instanceof RevisionConflictError) {
        if (state.session) await withSegments(state.session, true).catch(() => undefined);
        this.notify({
          id: "action",
          kind: "warn",
          title: `Could not ${what}: another tab changed this session first.`,
          body: "This view was reloaded; try again.",
        });
      } else {
        this.notify({ id: "action", kind: "error", title: `Could not ${what}.`, body: describeError(error) });
      }
      return undefined;
    } finally {
      state.busy = undefined;
      this.renderAll();
    }
  }
}

/**
 * Lists the session's segments (an open reads only the newest one), so the synchronous render
 * can show them through `listedSegments`; with `reload`, reads the session again first.
 */
export async function withSegments(session: Session, reload = false): Promise<Session> {
  if (reload) await session.reload();
  await session.segments();
  return session;
}

/** The settings used while the stored agent file is invalid. */
function defaultSettings(): Extract<CheckedSettings, { ok: true }> {
  const checked = checkSettings(DEFAULT_AGENT_TEXT);
  if (!checked.ok) throw new Error("the default agent settings are invalid");
  return checked;
}
