/**
 * The store's lock on the page: the lock button in the header (encrypted and unlocked, or in
 * the clear), its dialog (encrypt this store; set, change or remove the passphrase), the
 * passphrase prompt that unlocks the store at start, the export dialog's "seal with a
 * passphrase" fields and the prompt that opens a sealed file picked for import. The dialogs
 * are built here, so index.html holds only the button.
 */
import type { App } from "../app.ts";
import { describeError } from "../describe.ts";
import { byId, h, replaceChildren } from "../dom.ts";
import { changePassphrase, encryptStore, type StoreLockState, unsealedImport } from "../lock.ts";
import { toast } from "./toast.ts";

/** A passphrase field with its label. */
function passphraseField(id: string, label: string, autocomplete: "current-password" | "new-password"): { row: HTMLElement; input: HTMLInputElement } {
  const input = h("input", { type: "password", id, autocomplete, spellcheck: "false" });
  return { row: h("div", {}, h("label", { class: "field-label", for: id }, label), input), input };
}

/**
 * A modal prompt for a passphrase, built once per `id`. Each call shows it (with `error`,
 * when the last one failed) and resolves with what was typed, or `undefined` when cancelled
 * (only when `cancellable`: the store's unlock cannot be skipped).
 */
function passphrasePrompt(
  id: string,
  text: { title: string; intro: string; submit: string },
  cancellable: boolean,
): (error: string | undefined) => Promise<string | undefined> {
  const field = passphraseField(`${id}-passphrase`, "Passphrase", "current-password");
  const error = h("p", { class: "error", role: "alert" });
  const submit = h("button", { type: "submit", class: "button button-primary" }, text.submit);
  const cancel = cancellable ? h("button", { type: "button", class: "button" }, "Cancel") : null;
  const form = h(
    "form",
    { class: "dialog-form", method: "dialog" },
    h("header", { class: "dialog-header" }, h("h2", { id: `${id}-title` }, text.title)),
    h("p", { class: "dialog-intro" }, text.intro),
    field.row,
    error,
    h("footer", { class: "dialog-footer" }, h("span", { class: "spacer" }), cancel, submit),
  );
  const dialog = h("dialog", { class: "dialog", id, "aria-labelledby": `${id}-title` }, form);
  document.body.append(dialog);
  let settle: ((value: string | undefined) => void) | undefined;
  const finish = (value: string | undefined) => {
    dialog.close();
    field.input.value = "";
    settle?.(value);
    settle = undefined;
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (field.input.value !== "") finish(field.input.value);
  });
  cancel?.addEventListener("click", () => finish(undefined));
  dialog.addEventListener("cancel", (event) => {
    event.preventDefault();
    if (cancellable) finish(undefined);
  });
  return (message) => {
    error.textContent = message ?? "";
    dialog.showModal();
    field.input.focus();
    return new Promise((resolve) => (settle = resolve));
  };
}

/** The prompt that unlocks a passphrase-sealed store at start (it cannot be dismissed). */
export function askUnlockPassphrase(): (error: string | undefined) => Promise<string> {
  const ask = passphrasePrompt("unlock-dialog", {
    title: "Unlock this store",
    intro: "This playground's sessions are encrypted, and their key is sealed by a passphrase. Type it to open them.",
    submit: "Unlock",
  }, false);
  return async (error) => (await ask(error))!;
}

/** The lock icon's look and words for `lock`. */
function renderLockButton(button: HTMLElement, lock: StoreLockState): void {
  const label = lock.encrypted ? `Store encrypted and unlocked${lock.passphrase ? " (passphrase)" : ""}` : "Store in the clear: not encrypted";
  button.dataset["state"] = lock.encrypted ? "encrypted" : "plain";
  button.setAttribute("aria-label", label);
  button.title = `${label}. Click for encryption settings.`;
  replaceChildren(button, lockIcon(lock.encrypted));
}

/** A padlock drawn as SVG (closed, or with its shackle open), so it needs no emoji font. */
function lockIcon(closed: boolean): SVGSVGElement {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("width", "18");
  svg.setAttribute("height", "18");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("class", "lock-icon");
  const shackle = document.createElementNS(ns, "path");
  shackle.setAttribute("d", closed ? "M8 11V7a4 4 0 0 1 8 0v4" : "M8 11V7a4 4 0 0 1 7.75-1.4");
  const body = document.createElementNS(ns, "rect");
  for (const [name, value] of Object.entries({ x: "5", y: "11", width: "14", height: "10", rx: "2" })) body.setAttribute(name, value);
  svg.append(shackle, body);
  return svg;
}

/** A new passphrase and its confirmation, with an optional current one. */
function passphraseForm(withCurrent: boolean): {
  rows: HTMLElement[];
  current: HTMLInputElement | undefined;
  next: () => { value: string; confirmation: string };
} {
  const current = withCurrent ? passphraseField("lock-current", "Current passphrase", "current-password") : undefined;
  const next = passphraseField("lock-new", "New passphrase", "new-password");
  const confirmation = passphraseField("lock-confirm", "Confirm new passphrase", "new-password");
  return {
    rows: [...(current ? [current.row] : []), next.row, confirmation.row],
    current: current?.input,
    next: () => ({ value: next.input.value, confirmation: confirmation.input.value }),
  };
}

/**
 * Wires the lock button (index.html's `#store-lock`) and its dialog. `lock` is the state the
 * store opened in; it changes when the passphrase is changed or removed.
 */
export function bindLock(app: App, opened: StoreLockState): void {
  let lock = opened;
  const button = byId("store-lock");
  const body = h("div", { class: "dialog-form" });
  const dialog = h("dialog", { class: "dialog", id: "lock-dialog", "aria-labelledby": "lock-title" }, body);
  document.body.append(dialog);
  renderLockButton(button, lock);
  button.hidden = false;
  const report = h("p", { class: "lock-report", role: "alert" });
  const run = async (what: string, action: () => Promise<StoreLockState | "reloading" | void>) => {
    if (app.state.run || app.state.busy) {
      report.textContent = `Wait for the running turn or action to finish, then ${what}.`;
      return;
    }
    report.textContent = `${what[0]!.toUpperCase()}${what.slice(1)}…`;
    for (const control of body.querySelectorAll<HTMLButtonElement>("button")) control.disabled = true;
    try {
      const next = await action();
      if (next === "reloading" || next === undefined) return;
      lock = next;
      renderLockButton(button, lock);
      dialog.close();
      toast(lock.passphrase ? "Passphrase saved. It is asked for at every start." : "Passphrase removed. The key is kept unsealed in this browser.");
    } catch (error) {
      report.textContent = `Could not ${what}: ${describeError(error)}`;
      for (const control of body.querySelectorAll<HTMLButtonElement>("button")) control.disabled = false;
    }
  };
  const close = h("button", { type: "button", class: "button", onclick: () => dialog.close() }, "Close");
  const render = () => {
    report.textContent = "";
    if (!lock.encrypted) {
      const form = passphraseForm(false);
      replaceChildren(
        body,
        h("header", { class: "dialog-header" }, h("h2", { id: "lock-title" }, "Store encryption")),
        h(
          "p",
          { class: "dialog-intro" },
          "This store keeps its sessions in the clear in this browser's IndexedDB. Encrypting it seals every session file (live and archived) with AES-256-GCM under a key kept in this browser. With a passphrase, the key is sealed too, and the store opens only after you type it at start. Leave the passphrase empty to keep the key unsealed (a copy of this browser profile then still opens the store).",
        ),
        ...form.rows,
        report,
        h(
          "footer",
          { class: "dialog-footer" },
          h("span", { class: "spacer" }),
          close,
          h("button", {
            type: "button",
            class: "button button-primary",
            onclick: () => {
              const next = form.next();
              void run("encrypt this store", () => encryptStore(app.browser, next.value === "" && next.confirmation === "" ? undefined : next));
            },
          }, "Encrypt this store"),
        ),
      );
      return;
    }
    const form = passphraseForm(lock.passphrase);
    const current = () => form.current?.value;
    replaceChildren(
      body,
      h("header", { class: "dialog-header" }, h("h2", { id: "lock-title" }, "Store encryption")),
      h(
        "p",
        { class: "dialog-intro", "data-testid": "lock-status" },
        `Encrypted with AES-256-GCM and unlocked. Key ${lock.kid ?? ""}; ${
          lock.passphrase ? "sealed by a passphrase asked for at every start." : "kept unsealed in this browser (no passphrase)."
        }`,
      ),
      ...form.rows,
      report,
      h(
        "footer",
        { class: "dialog-footer" },
        lock.passphrase
          ? h("button", {
            type: "button",
            class: "button",
            onclick: () => void run("remove the passphrase", () => changePassphrase(app.browser, lock, current(), undefined)),
          }, "Remove passphrase")
          : null,
        h("span", { class: "spacer" }),
        close,
        h(
          "button",
          {
            type: "button",
            class: "button button-primary",
            onclick: () =>
              void run(lock.passphrase ? "change the passphrase" : "set a passphrase", () => changePassphrase(app.browser, lock, current(), form.next())),
          },
          lock.passphrase ? "Change passphrase" : "Set passphrase",
        ),
      ),
    );
  };
  button.addEventListener("click", () => {
    render();
    dialog.showModal();
  });
}

/** The export dialog's "seal with a passphrase" choice: `read` it (`undefined`: not sealed), `clear` the passphrases after a download. */
export function bindSealedExportFields(): { read: () => { value: string; confirmation: string } | undefined; clear: () => void } {
  const toggle = h("input", { type: "checkbox", id: "export-seal" });
  const next = passphraseField("export-passphrase", "Export passphrase", "new-password");
  const confirmation = passphraseField("export-passphrase-confirm", "Confirm export passphrase", "new-password");
  const fields = h(
    "div",
    { hidden: true },
    next.row,
    confirmation.row,
    h("p", { class: "muted small" }, "Anyone with the file and this passphrase can read it; without the passphrase it cannot be opened, here or anywhere."),
  );
  toggle.addEventListener("change", () => (fields.hidden = !toggle.checked));
  byId("export-form").insertBefore(
    h("fieldset", { class: "field" }, h("legend", {}, "Encryption"), h("label", { class: "choice" }, toggle, " Seal with a passphrase (AES-256-GCM)"), fields),
    byId("export-report"),
  );
  return {
    read: () => (toggle.checked ? { value: next.input.value, confirmation: confirmation.input.value } : undefined),
    clear: () => {
      next.input.value = "";
      confirmation.input.value = "";
    },
  };
}

/** Imports a picked file, asking for its passphrase first when it is a sealed export. */
export function bindSealedImport(app: App): (file: File) => Promise<void> {
  const ask = passphrasePrompt("import-passphrase-dialog", {
    title: "Open a sealed export",
    intro: "This file is a sealed export. Type the passphrase it was sealed with to import it.",
    submit: "Open and import",
  }, true);
  return async (file) => {
    try {
      const bytes = await unsealedImport(file.name, new Uint8Array(await file.arrayBuffer()), ask);
      if (bytes) await app.actions.importFile(file, bytes);
    } catch (error) {
      toast(`Could not import ${file.name}: ${describeError(error)}`, "error");
    }
  };
}
