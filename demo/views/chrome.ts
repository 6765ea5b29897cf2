/**
 * Small pieces of the page around the conversation: banners (notices with an optional
 * action), the welcome card of a new session, and the page's own confirmation dialog
 * (never `window.confirm`).
 */
import { byId, h } from "../dom.ts";

/** A notice above the conversation. */
export function banner(
  kind: "info" | "warn" | "error",
  title: string,
  options: { body?: string; items?: readonly string[]; action?: HTMLElement; dismiss?: () => void; testId?: string } = {},
): HTMLElement {
  return h(
    "div",
    { class: `banner banner-${kind}`, role: kind === "error" ? "alert" : "status", "data-testid": options.testId },
    h("div", { class: "banner-icon", "aria-hidden": "true" }, kind === "error" ? "!" : kind === "warn" ? "↺" : "i"),
    h(
      "div",
      { class: "banner-content" },
      h("div", { class: "banner-title" }, title),
      options.body ? h("div", { class: "banner-body" }, options.body) : null,
      options.items && options.items.length > 0 ? h("ul", { class: "banner-items" }, ...options.items.map((i) => h("li", {}, i))) : null,
    ),
    options.action ?? null,
    options.dismiss ? h("button", { type: "button", class: "button button-ghost button-small", "aria-label": "Dismiss", onclick: options.dismiss }, "✕") : null,
  );
}

/** The card a new, empty session shows, with suggestions that send themselves. */
export function welcome(send: (text: string) => void, enabled: boolean): HTMLElement {
  const suggestions = ["What is this playground?", "What is 17 * 23?", "Roll 3d20 for me", "What time is it?"];
  return h(
    "div",
    { class: "welcome" },
    h("h2", {}, "Sessions that never lose a message"),
    h(
      "p",
      {},
      "Everything here runs in this tab: the sessions live in IndexedDB behind a storage worker, and the built-in model needs no network. Its context window is small on purpose (2,000 tokens), so after about six turns you can watch a compaction fold the oldest half of the conversation into a segment with a cumulative summary.",
    ),
    h(
      "ul",
      { class: "welcome-points" },
      h("li", {}, h("strong", {}, "Reload mid-reply"), " — the streaming draft is recovered."),
      h("li", {}, h("strong", {}, "Open a second tab"), " — it follows commits and shows who owns the session."),
      h(
        "li",
        {},
        h("strong", {}, "Import / Export"),
        " — import from DeepCode, Rho, pi, Codex and Claude Code; export to Rho, DeepCode v1 and pi, redacted or not.",
      ),
    ),
    h(
      "div",
      { class: "suggestions", role: "group", "aria-label": "Suggestions" },
      ...suggestions.map((s) => h("button", { type: "button", class: "chip", onclick: () => send(s), disabled: !enabled }, s)),
    ),
  );
}

/** Resolves `true` when the user confirms in the page's own dialog (no `window.confirm`). */
export function confirmDelete(text: string): Promise<boolean> {
  const dialog = byId<HTMLDialogElement>("confirm-dialog");
  byId("confirm-text").textContent = text;
  return new Promise((resolve) => {
    const finish = (value: boolean) => {
      ok.removeEventListener("click", onOk);
      cancel.removeEventListener("click", onCancel);
      dialog.removeEventListener("cancel", onCancel);
      dialog.close();
      resolve(value);
    };
    const ok = byId("confirm-ok");
    const cancel = byId("confirm-cancel");
    const onOk = () => finish(true);
    const onCancel = () => finish(false);
    ok.addEventListener("click", onOk);
    cancel.addEventListener("click", onCancel);
    dialog.addEventListener("cancel", onCancel);
    dialog.showModal();
  });
}
