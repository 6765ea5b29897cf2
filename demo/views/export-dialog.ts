/**
 * The Export dialog: a format (Rho snapshot, the default since it needs nothing more; DeepCode
 * v1 stream or pi session, which record the folder the session worked in), whether to redact
 * secrets and drop the system prompt, whether to seal it with an export passphrase, and a
 * download. An export that fails says why inside the dialog and keeps it open.
 */
import type { SessionMeta } from "../../core/mod.ts";
import type { App } from "../app.ts";
import { describeError } from "../describe.ts";
import { byId, h, replaceChildren } from "../dom.ts";
import { sealDownload } from "../lock.ts";
import { download, type ExportFormat, needsCwd } from "../portable-io.ts";
import { bindSealedExportFields } from "./lock.ts";
import { toast } from "./toast.ts";

/** The folder an imported session brought (`meta.json` `imported_from.cwd`), if any. */
function ownCwd(meta: SessionMeta): string {
  const from = (meta as SessionMeta & { imported_from?: { cwd?: unknown } }).imported_from;
  return typeof from?.cwd === "string" ? from.cwd : "";
}

function chosenFormat(dialog: HTMLDialogElement): ExportFormat {
  return (dialog.querySelector<HTMLInputElement>("input[name=export-format]:checked")?.value ?? "rho") as ExportFormat;
}

/** Shows the working-folder field only for the formats that record one. */
function showCwdField(dialog: HTMLDialogElement): void {
  byId("export-cwd-field").hidden = !needsCwd(chosenFormat(dialog));
}

/** Opens the dialog with the last report cleared and the session's own folder filled in. */
export function openExportDialog(meta: SessionMeta): void {
  const dialog = byId<HTMLDialogElement>("export-dialog");
  byId("export-report").replaceChildren();
  byId<HTMLInputElement>("export-cwd").value = ownCwd(meta);
  showCwdField(dialog);
  dialog.showModal();
}

/** Wires the dialog's buttons: Download exports the open session with the chosen options. */
export function bindExportDialog(app: App): void {
  const dialog = byId<HTMLDialogElement>("export-dialog");
  const cwdInput = byId<HTMLInputElement>("export-cwd");
  const sealing = bindSealedExportFields();
  for (const radio of dialog.querySelectorAll<HTMLInputElement>("input[name=export-format]")) radio.addEventListener("change", () => showCwdField(dialog));
  byId("export-cancel").addEventListener("click", () => dialog.close());
  byId("export-download").addEventListener("click", () => {
    if (!app.state.session) return;
    const format = chosenFormat(dialog);
    const redact = byId<HTMLInputElement>("export-redact").checked;
    const dropSystemPrompt = byId<HTMLInputElement>("export-drop-system").checked;
    const cwd = cwdInput.value.trim();
    const seal = sealing.read();
    if (needsCwd(format) && cwd === "") {
      // Never a guessed folder in the file: the browser has no current folder to stand in.
      replaceChildren(
        byId("export-report"),
        h(
          "p",
          { class: "error" },
          "A DeepCode v1 stream and a pi session record the folder the session worked in, and this session has none: enter a working folder, or export a Rho snapshot.",
        ),
      );
      cwdInput.focus();
      return;
    }
    void (async () => {
      try {
        const exported = await app.actions.exportSession({ format, redact, dropSystemPrompt, ...(needsCwd(format) ? { cwd } : {}) });
        if (!exported) return;
        const { messageCount } = exported;
        const file = seal ? await sealDownload(exported.file, seal) : exported.file;
        download(file);
        sealing.clear();
        const masked = redact ? `${file.report.redactions} secret${file.report.redactions === 1 ? "" : "s"} redacted` : "not redacted";
        toast(`Exported ${messageCount} messages as ${file.fileName} (${masked}${seal ? ", sealed with a passphrase" : ""}).`);
        dialog.close();
      } catch (error) {
        replaceChildren(byId("export-report"), h("p", { class: "error" }, describeError(error)));
      }
    })();
  });
}
