/**
 * The side panel's tabs (History, Model): a tab list with the keyboard moves of the ARIA
 * tabs pattern (Left and Right arrows move between tabs, only the selected one is in the
 * Tab order).
 */
import { byId } from "../dom.ts";

/** Wires the tabs of index.html. */
export function bindPanelTabs(): void {
  const tabs = [byId("tab-history"), byId("tab-model")];
  const select = (tab: HTMLElement) => {
    for (const t of tabs) {
      const selected = t === tab;
      t.setAttribute("aria-selected", String(selected));
      t.tabIndex = selected ? 0 : -1;
      byId(t.getAttribute("aria-controls")!).hidden = !selected;
    }
  };
  for (const tab of tabs) {
    tab.addEventListener("click", () => select(tab));
    tab.addEventListener("keydown", (event) => {
      if (event.key !== "ArrowRight" && event.key !== "ArrowLeft") return;
      const next = tabs[(tabs.indexOf(tab) + (event.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length]!;
      select(next);
      next.focus();
    });
  }
}
