/**
 * The composer: the message box (Enter sends, Shift+Enter adds a line, it grows with its
 * text up to a limit), Send and Stop, and the name of the model the turn will use. An
 * archived session is read-only, so the box is disabled there.
 */
import type { App } from "../app.ts";
import { byId } from "../dom.ts";

/** The composer's box as the page drives it around a turn. */
export interface Composer {
  /** Renders the box, the buttons and the model's name from `app.state`. */
  render(): void;
  /** Empties the box (a turn took its text). */
  clear(): void;
  /** Puts `text` back into the box if it is still empty (the turn did not take it). */
  restore(text: string): void;
  focus(): void;
}

/** Wires the composer of index.html to `app` and returns it. */
export function bindComposer(app: App): Composer {
  const input = byId<HTMLTextAreaElement>("message-input");
  const autosize = () => {
    input.style.setProperty("height", "auto");
    input.style.setProperty("height", `${Math.min(200, input.scrollHeight + 2)}px`);
  };
  byId("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    void app.turns.send(input.value);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      void app.turns.send(input.value);
    }
  });
  input.addEventListener("input", autosize);
  byId("stop").addEventListener("click", () => app.turns.stop());
  return {
    render() {
      const { run, busy, archived } = app.state;
      const running = run !== undefined;
      input.disabled = archived;
      input.placeholder = archived ? "Archived sessions are read-only." : "Message the agent… (Enter to send, Shift+Enter for a new line)";
      byId<HTMLButtonElement>("send").disabled = running || busy !== undefined || archived;
      byId("stop").hidden = !running;
      byId("app").dataset["running"] = String(running);
      byId("composer-model").textContent = app.providers.label;
    },
    clear() {
      input.value = "";
      autosize();
    },
    restore(text) {
      if (input.value !== "") return;
      input.value = text;
      autosize();
    },
    focus() {
      input.focus();
    },
  };
}
