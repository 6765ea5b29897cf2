/**
 * The sidebar's session lists: the live sessions and, folded away, the archived ones; each
 * entry shows its title, size, age and tags (fork, imported, compacted) and opens on click.
 */
import type { SessionMeta } from "../../core/mod.ts";
import type { App } from "../app.ts";
import { byId, h, relativeTime, replaceChildren } from "../dom.ts";

/** Renders both lists from `app.state`. */
export function renderSessionList(app: App): void {
  const { session, archived, run, busy, metas, archivedMetas } = app.state;
  const item = (meta: SessionMeta, isArchived: boolean) => {
    const current = session?.ref.sessionId === meta.session_id && archived === isArchived;
    const tags: HTMLElement[] = [];
    if (meta.forked_from) tags.push(h("span", { class: "tag" }, "fork"));
    if ((meta as { imported_from?: unknown }).imported_from) tags.push(h("span", { class: "tag" }, "imported"));
    if ((meta.compaction?.completed ?? 0) > 0) tags.push(h("span", { class: "tag tag-segment" }, `${meta.compaction!.completed}× compacted`));
    const button = h(
      "button",
      {
        type: "button",
        class: "session-item",
        "aria-current": current ? "page" : null,
        disabled: run !== undefined || busy !== undefined,
        onclick: () => void app.navigation.openSession(meta.session_id, isArchived),
      },
      h("span", { class: "session-item-title" }, meta.title || meta.session_id),
      h(
        "span",
        { class: "session-item-meta" },
        `${meta.message_count} message${meta.message_count === 1 ? "" : "s"} · ${relativeTime(meta.updated_at)}`,
        ...tags,
      ),
    );
    return h("li", {}, button);
  };
  const list = byId("session-list");
  if (metas.length === 0) replaceChildren(list, h("li", { class: "muted small empty" }, "No sessions yet."));
  else replaceChildren(list, ...metas.map((m) => item(m, false)));
  replaceChildren(byId("archived-list"), ...archivedMetas.map((m) => item(m, true)));
  byId("archived-count").textContent = archivedMetas.length > 0 ? String(archivedMetas.length) : "";
  byId("archived").hidden = archivedMetas.length === 0;
  if (archived) (byId("archived") as HTMLDetailsElement).open = true;
}
