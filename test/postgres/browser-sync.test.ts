/** Background sync in Chromium between two browser profiles, the server over PostgreSQL (test/browser-runtime/sync-pages.ts). */
import { runBrowserSyncPages } from "../browser-runtime/sync-pages.ts";
import { freshStorage } from "./support.ts";

runBrowserSyncPages("PostgreSQL", async () => freshStorage());
