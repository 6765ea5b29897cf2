/**
 * The sync indicator in the sidebar: what the device's sync is doing (synced, pending N,
 * syncing, offline, error, refused, storage full) and when it last succeeded, the "offline" switch, a
 * "Sync now" button, and the forks the server made of this device's tails, each with the
 * session it came from, the sequence it follows and a link to it.
 */
import type { App } from "../app.ts";
import type { DeviceSync, ShownFork } from "../device-sync.ts";
import { byId, h, replaceChildren } from "../dom.ts";
import { toast } from "./toast.ts";

/** What the indicator says, from the switch and the scheduler's status. */
type SyncIndicator = "synced" | "pending" | "syncing" | "offline" | "error" | "refused" | "full" | "waiting";

/** The indicator's state: the switch first, then what the scheduler reports. */
function indicatorOf(offline: boolean, status: DeviceSync["status"]): SyncIndicator {
  if (offline || status.state === "offline") return "offline";
  if (status.state === "refused") return "refused";
  if (status.state === "storage-full") return "full";
  if (status.state === "retrying") return "error";
  if (status.state === "syncing") return "syncing";
  if (status.pending > 0) return "pending";
  return status.lastSuccessAt === null ? "waiting" : "synced";
}

/** What the problem line says first, where the indicator has its own words. */
const PROBLEMS: Partial<Record<SyncIndicator, string>> = {
  refused: "The server refused this device",
  // Nothing is retried until "Sync now" or a local change (docs/SYNC.md "Background sync in the browser").
  full: "This browser's storage for the page is full: delete or archive sessions, then Sync now",
};

/** Builds the indicator in `#sync-panel` and keeps it up to date with `sync`. */
export function mountSyncPanel(app: App, sync: DeviceSync, device: string | undefined): void {
  const state = h("span", { class: "sync-state", id: "sync-state", role: "status" });
  const detail = h("div", { class: "sync-detail muted small", id: "sync-detail" });
  const problem = h("div", { class: "sync-problem small", id: "sync-problem", hidden: true });
  const forks = h("ul", { class: "sync-forks", id: "sync-forks", "aria-label": "Forks made by the server" });
  const switchBox = h("input", {
    type: "checkbox",
    role: "switch",
    id: "sync-offline",
    onchange: () => sync.setOffline(switchBox.checked),
  });
  const token = h("form", {
    class: "sync-token",
    hidden: true,
    onsubmit: (event: Event) => {
      event.preventDefault();
      void sync.useToken(tokenInput.value.trim());
    },
  });
  const tokenInput = h("input", { type: "password", autocomplete: "off", "aria-label": "Sync server token", placeholder: "the server's token" });
  token.append(tokenInput, h("button", { type: "submit", class: "button button-small" }, "Use token"));
  const panel = byId("sync-panel");
  replaceChildren(
    panel,
    h(
      "div",
      { class: "sync-row" },
      h("span", { class: "sync-dot", "aria-hidden": "true" }),
      h("span", { class: "sync-title" }, device ? `Device ${device.toUpperCase()}` : "Sync"),
      state,
      h(
        "label",
        { class: "sync-switch", title: "Cut this device off the sync server; turning it back on pushes what was written meanwhile" },
        switchBox,
        "Offline",
      ),
    ),
    detail,
    problem,
    token,
    forks,
  );
  panel.hidden = false;
  let shownForks: readonly ShownFork[] = [];
  // A device (or a page in a frame) is shown by the two-devices page already.
  const framed = device !== undefined || globalThis.top !== globalThis.self;
  const render = () => {
    const status = sync.status;
    const indicator = indicatorOf(sync.offline, status);
    panel.dataset["syncState"] = indicator;
    panel.dataset["pending"] = String(status.pending);
    switchBox.checked = sync.offline;
    state.textContent = {
      synced: "Synced",
      pending: `Pending ${status.pending}`,
      syncing: "Syncing…",
      offline: status.pending > 0 ? `Offline · ${status.pending} pending` : "Offline",
      error: "Error",
      refused: "Refused",
      full: "Storage full",
      waiting: "Not synced yet",
    }[indicator];
    const last = status.lastSuccessAt === null ? "never synced" : `last synced ${new Date(status.lastSuccessAt).toLocaleTimeString()}`;
    replaceChildren(
      detail,
      last,
      " · ",
      h("button", { type: "button", class: "link-button", disabled: sync.offline, onclick: () => void sync.syncNow() }, "Sync now"),
      framed ? null : " · ",
      framed ? null : h("a", { href: "./devices.html", title: "Two devices side by side, each with its own store, syncing with this server" }, "Two devices"),
    );
    const error = status.lastError;
    problem.hidden = !error || indicator === "offline";
    problem.textContent = error
      ? `${PROBLEMS[indicator] ?? "The last sync failed"}: ${error.message}${
        status.nextAttemptAt && indicator === "error" ? ` (next try ${new Date(status.nextAttemptAt).toLocaleTimeString()})` : ""
      }`
      : "";
    token.hidden = indicator !== "refused" && !sync.hasToken;
    if (sync.forks !== shownForks) {
      const fresh = sync.forks.filter((f) => !shownForks.includes(f));
      shownForks = sync.forks;
      for (const fork of fresh) toast(`${titleOf(app, fork.ref)} continued on another device: your messages after #${fork.at_sequence} are in a fork.`, "warn");
      replaceChildren(forks, ...sync.forks.map((fork) => forkItem(app, fork)));
    }
  };
  sync.onChange(render);
  // The session list names the forks' titles once it is read; "last synced" is a clock.
  setInterval(render, 15_000);
  render();
}

function forkItem(app: App, fork: ShownFork): HTMLElement {
  const forkId = sessionIdOf(fork.forked_as);
  return h(
    "li",
    { class: "sync-fork", "data-fork": fork.forked_as },
    h("strong", {}, titleOf(app, fork.ref)),
    ` continued on another device after message #${fork.at_sequence}. Your messages from #${fork.at_sequence + 1} on are in a fork: `,
    h("a", { href: `#/${forkId}`, class: "sync-fork-link" }, "open the fork"),
    ".",
  );
}

/** A session's title as the list knows it, else its id. */
function titleOf(app: App, refText: string): string {
  const id = sessionIdOf(refText);
  const meta = app.state.metas.find((m) => m.session_id === id);
  return meta?.title ? `“${meta.title}”` : id;
}

function sessionIdOf(refText: string): string {
  return refText.split("/").at(-1)!;
}
