/**
 * Light and dark themes: the system's preference (prefers-color-scheme) until the user
 * picks one with the toggle; the pick is remembered in localStorage (it is not a secret).
 */
import { byId } from "../dom.ts";

/** Applies the theme and wires the toggle button. */
export function bindTheme(): void {
  const toggle = byId("theme-toggle");
  const stored = localStorage.getItem("sessionfold-playground:theme");
  const system = matchMedia("(prefers-color-scheme: dark)");
  const apply = (theme: "light" | "dark") => {
    document.documentElement.dataset["theme"] = theme;
    toggle.setAttribute("aria-pressed", String(theme === "dark"));
  };
  apply(stored === "dark" || stored === "light" ? stored : system.matches ? "dark" : "light");
  system.addEventListener("change", () => {
    if (!localStorage.getItem("sessionfold-playground:theme")) apply(system.matches ? "dark" : "light");
  });
  toggle.addEventListener("click", () => {
    const next = document.documentElement.dataset["theme"] === "dark" ? "light" : "dark";
    localStorage.setItem("sessionfold-playground:theme", next);
    apply(next);
  });
}
