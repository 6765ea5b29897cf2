/** Background sync in Chromium between two browser profiles, the server over memory (sync-pages.ts). */
import { MemoryStorage } from "../../core/mod.ts";
import { runBrowserSyncPages } from "./sync-pages.ts";

runBrowserSyncPages("memory", async () => ({ storage: new MemoryStorage() }));
