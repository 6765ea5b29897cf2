/**
 * The sessionfold playground: a client-side agent whose sessions live in this
 * browser's IndexedDB (the browser runtime's storage worker), with a built-in offline
 * model, compaction you can watch, recovery you can provoke, and import / export.
 */
import "./jitless.ts";
import { startApp } from "./app.ts";

try {
  await startApp();
} catch (error) {
  // Without IndexedDB or module workers (a locked-down profile, an old browser) nothing can run: say so.
  const app = document.getElementById("app");
  const message = error instanceof Error ? error.message : String(error);
  const box = document.createElement("div");
  box.className = "fatal";
  const title = document.createElement("h1");
  title.textContent = "The playground could not start";
  const text = document.createElement("p");
  text.textContent = `Its sessions live in this browser's IndexedDB, behind a module Web Worker, and opening them failed: ${message}`;
  box.append(title, text);
  app?.replaceChildren(box);
  app?.setAttribute("aria-busy", "false");
}
