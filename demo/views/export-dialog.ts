/**
 * The Export dialog: a format (DeepCode v1 stream or Rho snapshot), whether to redact
 * secrets and drop the system prompt, and a download. An export that fails says why inside
 * the dialog and keeps it open.
 */
import type { App } from "../app.ts";
import { describeError } from "../describe.ts";
import { byId, h, replaceChildren } from "../dom.ts";
import { download, type ExportFormat } from "../portable-io.ts";
import { toast } from "./toast.ts";

/** Opens the dialog with the last report cleared. */
export function openExportDialog(): void {
  byId("export-report").replaceChildren();
  byId<HTMLDialogElement>("export-dialog").showModal();
}

/** Wires the dialog's buttons: Download exports the open session with the chosen options. */
export function bindExportDialog(app: App): void {
  const dialog = byId<HTMLDialogElement>("export-dialog");
  byId("export-cancel").addEventListener("click", () => dialog.close());
  byId("export-download").addEventListener("click", () => {
    if (!app.state.session) return;
    const format = (dialog.querySelector<HTMLInputElement>("input[name=export-format]:checked")?.value ?? "deepcode") as ExportFormat;
    const redact = byId<HTMLInputElement>("export-redact").checked;
    const dropSystemPrompt = byId<HTMLInputElement>("export-drop-system").checked;
    void (async () => {
      try {
        const exported = await app.actions.exportSession({ format, redact, dropSystemPrompt });
        if (!exported) return;
        const { file, messageCount } = exported;
        download(file);
        const masked = redact ? `${file.report.redactions} secret${file.report.redactions === 1 ? "" : "s"} redacted` : "not redacted";
        toast(`Exported ${messageCount} messages as ${file.fileName} (${masked}).`);
        dialog.close();
      } catch (error) {
        replaceChildren(byId("export-report"), h("p", { class: "error" }, describeError(error)));
      }
    })();
  });
}
