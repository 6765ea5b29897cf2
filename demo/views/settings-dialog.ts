/**
 * The agent settings editor: a JSONC text area with line numbers, validated as you type
 * with `parseAgentConfig`. Each problem is listed with its line and column; choosing one
 * puts the caret there.
 */
import { type CheckedSettings, checkSettings, DEFAULT_AGENT_TEXT } from "../agent-settings.ts";
import { h, replaceChildren } from "../dom.ts";

/** What the dialog needs from the app. */
export interface SettingsHost {
  /** The stored text. */
  current(): string;
  /** Saves valid text (the host re-checks it); resolves the check. */
  save(text: string): Promise<CheckedSettings>;
}

/** Wires the dialog of index.html. */
export function bindSettingsDialog(host: SettingsHost): void {
  const dialog = document.getElementById("settings-dialog") as HTMLDialogElement;
  const text = document.getElementById("settings-text") as HTMLTextAreaElement;
  const gutter = document.getElementById("settings-gutter") as HTMLPreElement;
  const status = document.getElementById("settings-status") as HTMLDivElement;
  const save = document.getElementById("settings-save") as HTMLButtonElement;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let errorLines = new Set<number>();

  const paintGutter = () => {
    const count = text.value.split("\n").length;
    const lines: string[] = [];
    for (let i = 1; i <= count; i++) lines.push(errorLines.has(i) ? `● ${i}` : String(i));
    gutter.textContent = lines.join("\n");
    gutter.scrollTop = text.scrollTop;
  };

  const caretTo = (line: number, column: number) => {
    const lines = text.value.split("\n");
    let offset = 0;
    for (let i = 0; i < line - 1 && i < lines.length; i++) offset += lines[i]!.length + 1;
    offset += Math.max(0, column - 1);
    text.focus();
    text.setSelectionRange(offset, offset);
    const lineHeight = parseFloat(getComputedStyle(text).lineHeight) || 20;
    text.scrollTop = Math.max(0, (line - 4) * lineHeight);
  };

  const validate = (): CheckedSettings => {
    const checked = checkSettings(text.value);
    if (checked.ok) {
      errorLines = new Set();
      const c = checked.config;
      replaceChildren(
        status,
        h(
          "p",
          { class: "settings-ok" },
          "✓ Valid. ",
          h(
            "span",
            { class: "muted" },
            `context_window ${c.context_window ?? "unset"} · compaction ${c.compaction?.policy ?? "default"} · summarizer ${
              c.summarizer?.kind ?? "extractive"
            }`,
          ),
        ),
      );
      save.disabled = false;
    } else {
      errorLines = new Set(checked.problems.map((p) => p.line));
      replaceChildren(
        status,
        h("p", { class: "settings-error", role: "alert" }, checked.summary),
        h(
          "ul",
          { class: "settings-problems" },
          ...checked.problems.map((p) =>
            h(
              "li",
              {},
              h(
                "button",
                { type: "button", class: "link-button", onclick: () => caretTo(p.line, p.column) },
                `Line ${p.line}, column ${p.column}`,
              ),
              ` — ${p.path ? `${p.path}: ` : ""}${p.message}`,
            )
          ),
        ),
      );
      save.disabled = true;
    }
    paintGutter();
    return checked;
  };

  text.addEventListener("input", () => {
    paintGutter();
    clearTimeout(timer);
    timer = setTimeout(validate, 120);
  });
  text.addEventListener("scroll", () => (gutter.scrollTop = text.scrollTop));
  text.addEventListener("keydown", (event) => {
    if (event.key === "Tab" && !event.shiftKey && !event.altKey && !event.ctrlKey && !event.metaKey) {
      // Two spaces instead of leaving the editor; Escape then Tab still moves focus on.
      event.preventDefault();
      text.setRangeText("  ", text.selectionStart, text.selectionEnd, "end");
      text.dispatchEvent(new Event("input"));
    }
  });

  document.getElementById("settings-button")!.addEventListener("click", () => {
    text.value = host.current();
    validate();
    dialog.showModal();
    text.focus();
    text.setSelectionRange(0, 0);
  });
  document.getElementById("settings-cancel")!.addEventListener("click", () => dialog.close());
  document.getElementById("settings-reset")!.addEventListener("click", () => {
    text.value = DEFAULT_AGENT_TEXT;
    validate();
  });
  save.addEventListener("click", () => {
    const checked = validate();
    if (!checked.ok) return;
    save.disabled = true;
    void host.save(text.value).then(
      (result) => {
        if (result.ok) dialog.close();
        else validate();
      },
      () => (save.disabled = false),
    );
  });
}
