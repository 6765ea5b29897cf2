/**
 * The session's header and its actions: title and figures (revision, messages, segments,
 * size, where it came from), and the buttons that act on it (compact, fork, export,
 * archive, delete) or on the list (new session, import), enabled only when they can run.
 */
import { AGENT_ID, WORKSPACE_ID } from "../agent-settings.ts";
import type { App } from "../app.ts";
import { byId, formatBytes, formatNumber } from "../dom.ts";
import { openExportDialog } from "./export-dialog.ts";
import { bindSealedImport } from "./lock.ts";

/** Wires the action buttons (and the hidden file input behind Import) to the app's actions. */
export function bindSessionActions(app: App): void {
  byId("new-session").addEventListener("click", () => app.navigation.newSession());
  byId("compact-now").addEventListener("click", () => void app.actions.compactNow());
  byId("fork").addEventListener("click", () => void app.actions.forkSession());
  byId("archive").addEventListener("click", () => void app.actions.archiveSession());
  byId("delete").addEventListener("click", () => void app.actions.deleteSession());
  byId("export").addEventListener("click", () => {
    if (app.state.session) openExportDialog(app.state.session.meta);
  });
  const file = byId<HTMLInputElement>("import-file");
  const importPicked = bindSealedImport(app);
  byId("import-button").addEventListener("click", () => file.click());
  file.addEventListener("change", () => {
    const picked = file.files?.[0];
    file.value = "";
    if (picked) void importPicked(picked);
  });
}

/** Renders the title, the figures and which actions are enabled from `app.state`. */
export function renderSessionHeader(app: App): void {
  const { session, archived, run, busy, remoteOwner } = app.state;
  const title = byId("session-title");
  const meta = byId("session-meta");
  if (!session) {
    title.textContent = "New session";
    meta.textContent = "Your first message creates it.";
    meta.removeAttribute("title");
  } else {
    const m = session.meta;
    const segments = (session.listedSegments ?? []).length;
    title.textContent = m.title || m.session_id;
    const facts = [
      `revision ${m.revision}`,
      `${formatNumber(m.message_count)} message${m.message_count === 1 ? "" : "s"}`,
      `${segments} segment${segments === 1 ? "" : "s"}`,
      formatBytes(m.history_bytes),
    ];
    if (archived) facts.unshift("archived · read-only");
    if (m.forked_from) facts.push(`forked from ${m.forked_from.session_id.slice(0, 10)}… at #${m.forked_from.through_sequence}`);
    const importedFrom = (m as { imported_from?: { format?: string } }).imported_from;
    if (importedFrom?.format) facts.push(`imported from ${importedFrom.format}`);
    meta.title = `${AGENT_ID}/${WORKSPACE_ID}/${m.session_id}`;
    meta.textContent = facts.join(" · ");
  }
  const idle = !run && !busy;
  const has = session !== undefined;
  const enable = (id: string, enabled: boolean) => (byId<HTMLButtonElement>(id).disabled = !enabled);
  enable("compact-now", has && idle && !archived && !remoteOwner);
  enable("fork", has && idle && !archived);
  enable("export", has && idle);
  enable("archive", has && idle && !archived && !remoteOwner);
  enable("delete", has && idle && !remoteOwner);
  enable("new-session", !run);
  enable("import-button", idle);
}
