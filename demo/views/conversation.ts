/**
 * The conversation: the welcome card of a new session, or the committed messages with the
 * older segments paged in above the Active window, a recovered or another tab's draft, and
 * this tab's turn streaming at the end ("live", re-rendered on its own at each event). The
 * view stays at the newest message while the reader is there.
 */
import type { App } from "../app.ts";
import { ownerName } from "../describe.ts";
import { byId, formatNumber, h, replaceChildren } from "../dom.ts";
import { welcome } from "./chrome.ts";
import { renderMessage } from "./messages.ts";

/** Renders the whole conversation, its live end included, from `app.state`. */
export function renderConversation(app: App): void {
  const root = byId("messages");
  const atBottom = isAtBottom(root);
  const { session, run, archived, remoteOwner } = app.state;
  const nodes: HTMLElement[] = [];
  if (!session || (session.meta.message_count === 0 && !session.draft && !run)) {
    if (!run) nodes.push(welcome((text) => void app.turns.send(text), !archived));
  } else {
    const unpaged = app.navigation.unpagedSegments;
    if (unpaged.length > 0) {
      const first = unpaged[0]!.start;
      const last = unpaged.at(-1)!.end;
      nodes.push(
        h(
          "div",
          { class: "history-divider history-more" },
          h("span", {}, `${formatNumber(last - first + 1)} earlier message${last === first ? "" : "s"} in ${unpaged.length} segment${unpaged.length === 1 ? "" : "s"} (#${first}–#${last})`),
          h("button", { type: "button", class: "button button-small", onclick: () => void loadEarlier(app) }, "Load earlier messages"),
        ),
      );
    }
    for (const segment of app.navigation.pagedSegments) {
      nodes.push(h("div", { class: "history-divider" }, h("span", {}, `Segment #${segment.range.start}–#${segment.range.end} · compacted`)));
      for (const message of segment.messages) nodes.push(renderMessage(message, { state: "committed" }));
    }
    if ((session.listedSegments ?? []).length > 0 && session.active.length > 0) {
      nodes.push(
        h(
          "div",
          { class: "history-divider history-active-divider" },
          h("span", {}, `Active window from #${session.active[0]!.sequence} — the model sees the summary of everything above, not the messages`),
        ),
      );
    }
    for (const message of session.active) nodes.push(renderMessage(message));
    const draft = session.draft;
    if (draft && !run) {
      const note = remoteOwner ? `streaming in ${ownerName(remoteOwner)}` : "interrupted · draft";
      for (const pending of draft.pending) nodes.push(renderMessage(pending, { state: "pending", note: "not committed yet" }));
      nodes.push(renderMessage(draft.record, { state: "draft", note }));
    }
  }
  nodes.push(h("div", { class: "live", id: "live" }));
  replaceChildren(root, ...nodes);
  renderLiveTurn(app);
  if (atBottom) scrollConversationToEnd();
}

/** Renders this tab's streaming turn (its messages not committed yet, and a compaction in progress). */
export function renderLiveTurn(app: App): void {
  const root = document.getElementById("live");
  if (!root) return;
  const atBottom = isAtBottom(byId("messages"));
  const run = app.state.run;
  if (!run) {
    root.replaceChildren();
    return;
  }
  replaceChildren(
    root,
    ...run.messages.map((m, i) =>
      renderMessage(
        { role: m.role, parts: m.parts, ...(m.usage ? { usage: m.usage } : {}), ...(m.provider ? { provider: m.provider } : {}) },
        { state: m.role === "user" ? "pending" : "streaming", ...(i === run.messages.length - 1 && m.role === "assistant" ? { note: "streaming" } : {}) },
      ),
    ),
    run.compacting ? h("div", { class: "history-divider history-compacting" }, h("span", { class: "spinner", "aria-hidden": "true" }), h("span", {}, `Compacting before the next step: ${run.compacting}`)) : null,
  );
  if (atBottom) scrollConversationToEnd();
}

/** Scrolls the conversation to its newest message. */
export function scrollConversationToEnd(): void {
  const root = byId("messages");
  root.scrollTop = root.scrollHeight;
}

/** Pages in the next older segment, keeping the messages in view where they were. */
async function loadEarlier(app: App): Promise<void> {
  const root = byId("messages");
  const height = root.scrollHeight;
  if (await app.navigation.loadEarlier()) root.scrollTop += root.scrollHeight - height;
}

/** Close enough to the end that new content should keep the view there. */
function isAtBottom(element: HTMLElement): boolean {
  return element.scrollHeight - element.scrollTop - element.clientHeight < 80;
}
