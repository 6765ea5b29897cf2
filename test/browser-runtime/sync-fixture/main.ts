/**
 * The fixture page of `test/browser-runtime/sync-pages.test.ts`: one device of a web app that
 * syncs in the background (`openBrowserSessions` with its storage worker, `startBackgroundSync`
 * against a sync server). Playwright drives it through `window.sync`; every answer is JSON.
 *
 * Query parameters: `db` (IndexedDB name), `server` (the sync server's base URL), `remote` (its id, default `server`), `user`.
 */
import { openBrowserSessions, startBackgroundSync } from "../../../runtime-browser/mod.ts";
import { httpRemote, type SyncFork, type SyncStatus } from "../../../core/sync/mod.ts";

const params = new URLSearchParams(location.search);
const browser = await openBrowserSessions({ dbName: params.get("db") ?? "sync-fixture" });
const sync = startBackgroundSync({
  sessions: browser,
  remote: httpRemote({
    url: params.get("server")!,
    id: params.get("remote") ?? "server",
    headers: { authorization: `Bearer ${params.get("user") ?? "alice"}` },
  }),
  intervalMs: 500,
  debounceMs: 0,
  backoff: { initialMs: 100, maxMs: 500 },
});
const forks: SyncFork[] = [];
const states: SyncStatus["state"][] = [];
sync.on("fork", (fork) => forks.push(fork));

sync.on("status", (status) => {
  if (states.at(-1) !== status.state) states.push(status.state);
});

async function say(ref: string, text: string): Promise<string> {
  const [agentId, workspaceId, sessionId] = ref.split("/") as [string, string, string];
  const exists = (await refs()).includes(ref);
  const session = exists ? await browser.sessions.open(ref) : await browser.sessions.create({ agentId, workspaceId, sessionId });
  await session.append({ role: "user", parts: [{ type: "text", text }] });
  return session.active.at(-1)!.message_id;
}

async function texts(ref: string): Promise<string[]> {
  const session = await browser.sessions.open(ref);
  return session.active.map((m) => m.parts.map((p) => ("text" in p ? p.text : "")).join(""));
}

async function refs(): Promise<string[]> {
  return (await browser.sessions.list()).map((m) => `${m.agent_id}/${m.workspace_id}/${m.session_id}`).sort();
}

/** A sync now (the host's "Sync now"); resolves with nothing once it ended. */
async function syncNow(): Promise<void> {
  await sync.syncNow();
}

Object.assign(window, { sync: { ready: true, say, texts, refs, syncNow, forks, states, status: () => sync.status } });
