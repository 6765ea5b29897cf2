/** Short-lived notes in the corner (a polite live region announces them). */
import { h } from "../dom.ts";

/** Shows `text` for a few seconds. */
export function toast(text: string, kind: "info" | "warn" | "error" = "info"): void {
  const root = document.getElementById("toasts");
  if (!root) return;
  const item = h("div", { class: `toast toast-${kind}` }, text);
  root.append(item);
  while (root.childElementCount > 3) root.firstElementChild?.remove();
  setTimeout(() => {
    item.classList.add("toast-leaving");
    setTimeout(() => item.remove(), 300);
  }, kind === "info" ? 5000 : 8000);
}
