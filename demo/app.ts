/**
 * The playground's app: its state and its actions, in named parts. `App` holds the
 * {@linkcode PlaygroundStore} (the state and the channel to the page), and the parts that
 * change it: {@linkcode Navigation} (which session is shown, the lists, paging),
 * {@linkcode Turns} (sending and streaming) and {@linkcode SessionActions} (compact, fork,
 * archive, delete, import, export). It follows the session worker itself: other tabs'
 * commits and writer locks, and the URL. It draws nothing: the views under views/ render
 * from `state` and call the actions.
 */
import type { Session } from "../core/mod.ts";
import type { BrowserSessions } from "../runtime-browser/mod.ts";
import { type CheckedSettings, checkSettings, saveSettingsText } from "./agent-settings.ts";
import { LocalModel } from "./local-model.ts";
import { Navigation, sessionRef } from "./navigation.ts";
import { type EndpointProvider, ProviderChoice } from "./provider-choice.ts";
import { SessionActions } from "./session-actions.ts";
import type { PlaygroundState } from "./state.ts";
import { type AppView, PlaygroundStore, withSegments } from "./store.ts";
import { Turns } from "./turn.ts";

/** Options of {@linkcode App}. */
export interface AppOptions {
  /** The local model's first streaming speed, in milliseconds per chunk. */
  readonly chunkDelayMs: number;
}

/** The playground's state and actions. */
export class App {
  readonly browser: BrowserSessions;
  /** The local model's streaming speed, read at each chunk (the Model tab and the tests change it). */
  chunkDelayMs: number;
  /** After how many characters of text the local model holds a reply (tests; `LocalModelOptions.holdAfterTextChars`). */
  holdAfterTextChars = Number.POSITIVE_INFINITY;
  readonly providers: ProviderChoice;
  readonly navigation: Navigation;
  readonly turns: Turns;
  readonly actions: SessionActions;
  readonly #store: PlaygroundStore;
  #pollBusy = false;

  constructor(browser: BrowserSessions, settingsText: string, options: AppOptions) {
    this.browser = browser;
    this.chunkDelayMs = options.chunkDelayMs;
    const store = new PlaygroundStore(settingsText);
    this.#store = store;
    this.providers = new ProviderChoice(
      new LocalModel({
        contextWindow: () => store.state.config.context_window ?? 2000,
        chunkDelayMs: () => this.chunkDelayMs,
        holdAfterTextChars: () => this.holdAfterTextChars,
      }),
    );
    this.navigation = new Navigation(store, browser, () => this.#pollOwnership());
    this.actions = new SessionActions(store, browser, this.navigation);
    this.turns = new Turns(store, { browser, navigation: this.navigation, providers: this.providers, actions: this.actions });
  }

  /** What the views render from; only the app's parts change it. */
  get state(): Readonly<PlaygroundState> {
    return this.#store.state;
  }

  /** Renders to `view`, follows the worker, the other tabs and the URL, and opens the session the URL names (or the newest). */
  async start(view: AppView): Promise<void> {
    this.#store.connect(view);
    this.browser.onCommit((event) => void this.#onRemoteCommit(event.refText, event.revision));
    setInterval(() => void this.#pollOwnership(), 1000);
    globalThis.addEventListener("hashchange", () => void this.navigation.openFromHash());
    await this.navigation.refreshList();
    await this.navigation.openFromHash(true);
  }

  /** A sync wrote into the store: read the lists again, and the open session unless a turn or an action of this tab runs. */
  async followSync(): Promise<void> {
    await this.navigation.refreshList();
    const { session, run, busy } = this.#store.state;
    if (session && !run && !busy) await this.navigation.reopen();
  }

  /** Hides the notice `id`. */
  dismiss(id: string): void {
    this.#store.dismiss(id);
  }

  /** Hides the recovery findings of `session` until it is opened again. */
  dismissDiagnostics(session: Session): void {
    this.#store.dismissDiagnostics(session);
  }

  /** Checks the agent file's `text` and, when valid, stores it and applies it to every session from now on. */
  async saveSettings(text: string): Promise<CheckedSettings> {
    const checked = checkSettings(text);
    if (!checked.ok) return checked;
    const store = this.#store;
    await store.guard("save settings", async () => {
      await saveSettingsText(this.browser.storage, text);
      store.state.settingsText = text;
      store.state.config = checked.config;
      store.state.options = checked.options;
      if (store.state.session) await this.navigation.reopen();
      store.view.toast("Agent settings saved. They apply to every session from now on.");
    });
    return checked;
  }

  /** Streams the next turns from an endpoint provider the Model tab built. */
  useEndpoint(provider: EndpointProvider): void {
    this.providers.useEndpoint(provider);
    this.#store.render("composer", "panel");
  }

  /** Streams the next turns from the built-in local model again. */
  useLocalModel(): void {
    this.providers.useLocal();
    this.#store.render("composer", "panel");
  }

  /** Another tab committed to a session: refresh the lists, and follow it if it is the open one. */
  async #onRemoteCommit(refText: string, revision: number): Promise<void> {
    this.navigation.scheduleListRefresh();
    const { session, run, busy, archived } = this.#store.state;
    if (!session || run || busy || archived) return;
    if (refText !== sessionRef(session.ref.sessionId) || revision <= session.revision) return;
    await withSegments(session, true).catch(() => undefined);
    this.#store.renderAll();
    this.#store.view.scrollToEnd();
  }

  /** Whether another tab holds the session's writer lock; while it does, follow its draft. */
  async #pollOwnership(): Promise<void> {
    const store = this.#store;
    const state = store.state;
    const session = state.session;
    if (!session || state.run || state.busy || state.archived || this.#pollBusy || document.visibilityState !== "visible") return;
    this.#pollBusy = true;
    try {
      const owner = await this.browser.heldBy(session);
      if (state.run || state.busy || session !== state.session) return;
      if (owner) {
        state.remoteOwner = owner;
        await withSegments(session, true);
        store.renderAll();
        store.view.scrollToEnd();
      } else if (state.remoteOwner) {
        state.remoteOwner = undefined;
        store.dismiss("locked");
        await withSegments(session, true);
        store.renderAll();
        store.view.scrollToEnd();
      }
    } catch {
      // Polling is best effort; the next tick tries again.
    } finally {
      this.#pollBusy = false;
    }
  }
}
