/**
 * This tab's turn: sending a message (the first one creates the session), streaming the
 * run into the live end of the chat, stopping it, and saying what a failed run means. A
 * refused turn puts its text back into the box; nothing of it was written.
 *
 * The reply is read the way a `useChat` client reads it: the run goes through the bridge
 * (`runToUIMessageStream`, the AI SDK's UI message stream) and the AI SDK's own
 * `readUIMessageStream` builds the UI message the chat shows.
 */
import {
  CancelledError,
  ContextOverflowError,
  CorruptSessionError,
  ProviderError,
  RevisionConflictError,
  type RunEvent,
  type RunHandle,
  SessionBusyError,
  WriterLockedError,
} from "../core/mod.ts";
import { newId } from "../core/internal.ts";
import type { BrowserSessions } from "../runtime-browser/mod.ts";
import { AGENT_ID, WORKSPACE_ID } from "./agent-settings.ts";
import { describeError, ownerName } from "./describe.ts";
import { runToUIMessageStream } from "../ai-sdk/ui-stream.ts";
import { type ChatMessage, type LiveRun, noteRunEvent, startLiveRun } from "./live-run.ts";
import type { Navigation } from "./navigation.ts";
import type { ProviderChoice } from "./provider-choice.ts";
import type { SessionActions } from "./session-actions.ts";
import { type PlaygroundStore, withSegments } from "./store.ts";
import { demoTools } from "./tools.ts";

/** What a turn needs besides the store. */
export interface TurnParts {
  readonly browser: BrowserSessions;
  readonly navigation: Navigation;
  readonly providers: ProviderChoice;
  /** Announces the compactions a run makes on its own. */
  readonly actions: SessionActions;
}

/** Sends messages and runs their turns. */
export class Turns {
  readonly #store: PlaygroundStore;
  readonly #parts: TurnParts;

  constructor(store: PlaygroundStore, parts: TurnParts) {
    this.#store = store;
    this.#parts = parts;
  }

  /** Sends `raw` as the next user message (creating the session first if it is new) and streams the turn. */
  async send(raw: string): Promise<void> {
    const store = this.#store;
    const state = store.state;
    const { browser, navigation, providers } = this.#parts;
    const text = raw.trim();
    if (text === "" || state.run || state.busy || state.archived) return;
    if (!state.session) {
      try {
        const title = text.replace(/\s+/g, " ").slice(0, 60);
        state.session = await browser.sessions.create(
          {
            agentId: AGENT_ID,
            workspaceId: WORKSPACE_ID,
            sessionId: newId("s"),
            title,
            ...(state.config.model_label ? { modelLabel: state.config.model_label } : {}),
            timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
          },
          state.options,
        );
        state.archived = false;
        navigation.setHash();
        await navigation.refreshList();
      } catch (error) {
        store.notify({ id: "send", kind: "error", title: "Could not create the session.", body: describeError(error) });
        return;
      }
    }
    const session = state.session;
    const run = startLiveRun(text);
    state.run = run;
    store.view.turnStarted();
    store.dismiss("send");
    store.dismiss("locked");
    store.renderAll();
    store.view.scrollToEnd();
    let failure: { readonly error: unknown } | undefined;
    let reading: Promise<void> | undefined;
    try {
      const handle = session.run(text, {
        provider: providers.current,
        tools: demoTools,
        signal: run.controller.signal,
        onEvent: (event) => this.#onRunEvent(run, event),
      });
      reading = this.#readReply(run, handle);
      await handle.result;
    } catch (error) {
      failure = { error };
    } finally {
      // The stream ends right after the run settles (its `finish` chunk): the reply is whole.
      await reading;
      state.run = undefined;
      // The notice and the text put back into the box in one task: a notice that says the message
      // is still in the box is never shown before it is.
      const restore = failure !== undefined && this.#reportRunError(failure.error);
      store.view.turnEnded(text, restore);
      store.renderAll();
      store.view.scrollToEnd();
      navigation.scheduleListRefresh();
    }
  }

  /** Stops this tab's turn; the core commits the partial reply as stopped. */
  stop(): void {
    this.#store.state.run?.controller.abort();
  }

  /** Shows what a failed run means; `true` when the text should go back into the box. */
  #reportRunError(error: unknown): boolean {
    const store = this.#store;
    const state = store.state;
    if (error instanceof CancelledError) {
      store.view.toast(`Stopped. The partial reply is kept as “stopped” (revision ${error.revision ?? "?"}).`);
      return false;
    }
    if (error instanceof WriterLockedError) {
      state.remoteOwner = error.owner ?? state.remoteOwner;
      store.notify({
        id: "locked",
        kind: "warn",
        title: `Not sent: ${ownerName(error.owner)} is writing this session (WriterLockedError).`,
        body: "Nothing was written. This tab follows that tab's commits; send again when it has finished. Your message is still in the box.",
      });
      return true;
    }
    if (error instanceof RevisionConflictError) {
      store.notify({
        id: "send",
        kind: "warn",
        title: "Another tab committed to this session first (RevisionConflictError).",
        body: "This view was reloaded; nothing of your message was written. Send it again.",
      });
      if (state.session) void withSegments(state.session, true).then(() => store.renderAll());
      return true;
    }
    if (error instanceof SessionBusyError) {
      store.notify({ id: "send", kind: "warn", title: "This session is busy in this tab.", body: error.message });
      return true;
    }
    if (error instanceof ProviderError || error instanceof ContextOverflowError) {
      store.notify({ id: "send", kind: "error", title: "The model failed; nothing of this turn was committed.", body: error.message });
      return true;
    }
    if (error instanceof CorruptSessionError) {
      store.notify({ id: "send", kind: "error", title: "This session is read-only until it is repaired.", body: error.message });
      return true;
    }
    store.notify({ id: "send", kind: "error", title: "The turn failed.", body: describeError(error) });
    return true;
  }

  /**
   * Reads the run's UI message stream into `run.reply`, one UI message growing chunk by
   * chunk, as `useChat` does. Never rejects: a failed run ends the stream with an `error`
   * chunk, and the turn reports the run's own typed error.
   */
  async #readReply(run: LiveRun, handle: RunHandle): Promise<void> {
    // The AI SDK's reader is its own chunk, loaded at the first send: the page opens without it.
    // Nothing is missed meanwhile: the stream reads the run's events from its first one.
    const { readUIMessageStream } = await import("./chat-reader.ts");
    // The page is its own server: nothing to hide from it. The run's own failure is shown from its result.
    const stream = runToUIMessageStream(handle, { onError: describeError });
    const messages = readUIMessageStream<ChatMessage>({ stream, onError: () => undefined });
    for await (const message of messages) {
      run.reply = message;
      this.#store.render("live");
    }
  }

  #onRunEvent(run: LiveRun, event: RunEvent): void {
    const store = this.#store;
    noteRunEvent(run, event);
    switch (event.type) {
      case "usage":
      case "compaction-started":
        store.render("panel", "live");
        return;
      case "compaction-completed":
        this.#parts.actions.announceCompaction(event.outcome, true);
        return;
      case "compaction-failed":
        store.view.toast(`Compaction failed, nothing changed: ${event.message}`, "error");
        store.render("panel");
        return;
      case "context-folded":
        store.view.toast(
          `The model refused the input as too long; it was folded in memory (depth ${event.depth}, ${event.droppedMessages} messages left out of this request).`,
          "warn",
        );
        return;
      case "committed":
        // A recovered draft committed first (its own commit) or the turn's final commit.
        store.render("messages", "panel", "header");
        return;
      default:
        // The reply's content reaches the chat through the UI message stream (#readReply).
        return;
    }
  }
}
