/**
 * The sessionfold playground: a client-side agent whose sessions live in this
 * browser's IndexedDB (the browser runtime's storage worker), with a built-in offline
 * model, compaction you can watch, recovery you can provoke, and import / export.
 *
 * The page's query may name the database (`?db=`, so tests get their own) or the device the
 * page plays (`?device=a`: its own database, synced with the local sync server; devices.html
 * shows two side by side), and the local model's first streaming speed in milliseconds per
 * chunk (`?delay=`). The store may be encrypted (the lock button in the header); a
 * passphrase-sealed one asks for its passphrase before anything opens (lock.ts).
 */
import "./jitless.ts";
import { toUIMessages } from "../ai-sdk/ui-messages.ts";
import { followKeyChanges, openPlaygroundStore } from "./lock.ts";
import { loadSettingsText } from "./agent-settings.ts";
import { App } from "./app.ts";
import { deviceChoice } from "./device.ts";
import { LOCAL_MODEL_SPEEDS } from "./provider-choice.ts";
import { askUnlockPassphrase, bindLock } from "./views/lock.ts";
import { mountPage } from "./views/page.ts";

const query = new URLSearchParams(location.search);
const delay = Number(query.get("delay"));
const choice = deviceChoice(query);
if (choice.device) document.body.dataset["device"] = choice.device;

try {
  followKeyChanges(choice.dbName);
  const { browser, lock } = await openPlaygroundStore(choice.dbName, askUnlockPassphrase());
  const app = new App(browser, await loadSettingsText(browser.storage), {
    chunkDelayMs: Number.isFinite(delay) && query.has("delay") ? Math.max(0, delay) : LOCAL_MODEL_SPEEDS.normal,
  });
  await app.start(mountPage(app));
  bindLock(app, lock);
  // Sync is a chunk of its own, loaded once the app runs: a page that does not sync never loads it.
  const sync = choice.syncs ? await import("./device-sync.ts").then(({ DeviceSync }) => new DeviceSync(app, browser)) : undefined;
  if (sync) (await import("./views/sync-panel.ts")).mountSyncPanel(app, sync, choice.device);
  document.getElementById("app")!.setAttribute("aria-busy", "false");
  // What the end-to-end tests reach into: the storage, the open session, its whole history as
  // `useChat` would load it, the local model's speed, where it holds a reply, and the device's sync.
  (window as unknown as { playground: object }).playground = {
    browser: app.browser,
    sync,
    get session() {
      return app.state.session;
    },
    uiMessages: () => (app.state.session ? toUIMessages(app.state.session) : Promise.resolve([])),
    get chunkDelayMs() {
      return app.chunkDelayMs;
    },
    set chunkDelayMs(ms: number) {
      app.chunkDelayMs = ms;
    },
    set holdAfterTextChars(chars: number) {
      app.holdAfterTextChars = chars;
    },
  };
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
