/**
 * The notices above the conversation, from the state: who owns the session when another
 * tab writes it, a recovered draft to finish, what recovery found, that an archived session
 * is read-only, and the app's own notices (each dismissable).
 */
import type { App } from "../app.ts";
import { describeDiagnostic, ownerName } from "../describe.ts";
import { byId, formatNumber, h, replaceChildren } from "../dom.ts";
import { banner } from "./chrome.ts";

/** Renders the banners from `app.state`. */
export function renderBanners(app: App): void {
  const { session, run, archived, remoteOwner, diagnosticsSeen, notices } = app.state;
  const banners: HTMLElement[] = [];
  if (session && remoteOwner && !run) {
    banners.push(
      banner("info", `${ownerName(remoteOwner)} owns this session right now (${remoteOwner.operation}).`, {
        body: "Its writer lock is held by that tab's storage worker, so writes from here get a WriterLockedError. This tab follows its commits as they happen.",
        testId: "owner-banner",
      }),
    );
  } else if (session?.draft && !run && !archived) {
    const draft = session.draft;
    const chars = draft.record.parts.reduce((n, p) => n + ("text" in p && typeof p.text === "string" ? p.text.length : 0), 0);
    banners.push(
      banner("warn", "An interrupted reply was recovered.", {
        body: `${formatNumber(chars)} characters had streamed${
          draft.pending.length > 0 ? `, with ${draft.pending.length} message${draft.pending.length === 1 ? "" : "s"} of the same turn` : ""
        } when the tab went away (started ${
          new Date(draft.record.created_at).toLocaleTimeString()
        }). Finish it as “stopped” to commit it, or just send a new message.`,
        action: h("button", { type: "button", class: "button button-primary", onclick: () => void app.actions.finishDraft() }, "Finish as stopped"),
        testId: "draft-banner",
      }),
    );
  }
  // A fatal finding stays: it explains why the session is read-only.
  if (session && session.diagnostics.length > 0 && (diagnosticsSeen !== session || session.diagnostics.some((d) => d.fatal))) {
    const fatal = session.diagnostics.some((d) => d.fatal);
    banners.push(
      banner(
        fatal ? "error" : "info",
        fatal
          ? "Recovery found corruption: this session is read-only."
          : `Recovery made ${session.diagnostics.length} finding${session.diagnostics.length === 1 ? "" : "s"} when this session was opened.`,
        {
          items: session.diagnostics.map(describeDiagnostic),
          testId: "diagnostics-banner",
          dismiss: () => app.dismissDiagnostics(session),
        },
      ),
    );
  }
  if (archived) banners.push(banner("info", "This session is archived and read-only.", { body: "You can read, export, fork or delete it." }));
  for (const notice of notices) {
    banners.push(
      banner(notice.kind, notice.title, {
        ...(notice.body !== undefined ? { body: notice.body } : {}),
        ...(notice.items ? { items: notice.items } : {}),
        dismiss: () => app.dismiss(notice.id),
        testId: `notice-${notice.id}`,
      }),
    );
  }
  replaceChildren(byId("banners"), ...banners);
}
