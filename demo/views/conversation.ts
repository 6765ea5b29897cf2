/**
 * The conversation, as a `useChat`-style client shows it: AI SDK UI messages, one per
 * user message and one per assistant turn. The welcome card of a new session, or the
 * committed messages with the older segments paged in above the Active window, a recovered
 * or another tab's draft, and this tab's reply streaming at the end ("live", re-rendered on
 * its own at each chunk of the UI message stream). Stored messages become UI messages by
 * `groupTurns`, the mapping `toUIMessages` applies, over what the view has paged in (all of
 * history would be `toUIMessages(session)`; the view stays bounded). The view stays at the
 * newest message while the reader is there.
 */
import type { MessageRecord } from "../../core/mod.ts";
import { groupTurns } from "../../ai-sdk/ui-messages.ts";
import type { App } from "../app.ts";
import { ownerName } from "../describe.ts";
import { byId, formatNumber, h, replaceChildren } from "../dom.ts";
import { welcome } from "./chrome.ts";
import { type MessageLook, renderMessage } from "./messages.ts";

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
          h(
            "span",
            {},
            `${formatNumber(last - first + 1)} earlier message${last === first ? "" : "s"} in ${unpaged.length} segment${
              unpaged.length === 1 ? "" : "s"
            } (#${first}–#${last})`,
          ),
          h("button", { type: "button", class: "button button-small", onclick: () => void loadEarlier(app) }, "Load earlier messages"),
        ),
      );
    }
    for (const segment of app.navigation.pagedSegments) {
      nodes.push(h("div", { class: "history-divider" }, h("span", {}, `Segment #${segment.range.start}–#${segment.range.end} · compacted`)));
      nodes.push(...renderTurns(segment.messages, { state: "committed" }));
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
    nodes.push(...renderTurns(session.active, { state: "committed" }));
    const draft = session.draft;
    if (draft && !run) {
      // The draft's question (and earlier steps) and its partial reply: the turn toUIMessages ends with.
      const note = remoteOwner ? `streaming in ${ownerName(remoteOwner)}` : "interrupted · draft";
      nodes.push(
        ...renderTurns(
          [...draft.pending, draft.record as MessageRecord],
          (message) => message.role === "user" ? { state: "pending", note: "not committed yet" } : { state: "draft", note },
        ),
      );
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
  const question = renderMessage({ id: "pending", role: "user", parts: [{ type: "text", text: run.question }] }, { state: "pending" });
  const reply = run.reply ?? { id: "pending-reply", role: "assistant" as const, parts: [] };
  replaceChildren(
    root,
    question,
    renderMessage(reply, { state: "streaming", note: "streaming", model: app.providers.current.identity.model }),
    run.compacting
      ? h(
        "div",
        { class: "history-divider history-compacting" },
        h("span", { class: "spinner", "aria-hidden": "true" }),
        h("span", {}, `Compacting before the next step: ${run.compacting}`),
      )
      : null,
  );
  if (atBottom) scrollConversationToEnd();
}

/** Stored messages as UI messages (one per user message, one per assistant turn), each with its look. */
function renderTurns(records: readonly MessageRecord[], look: MessageLook | ((message: { role: string }) => MessageLook)): HTMLElement[] {
  const bySequence = new Map(records.map((record) => [record.sequence, record]));
  return groupTurns(records).map((message) => {
    const model = bySequence.get(message.metadata?.sequence ?? -1)?.provider?.model;
    return renderMessage(message, { ...(typeof look === "function" ? look(message) : look), ...(model ? { model } : {}) });
  });
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
