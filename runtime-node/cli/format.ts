/**
 * Readable text of the CLI's results: tables, one-line messages, diagnostics, lock owners.
 *
 * @module
 */
import type { MessagePart, MessageRecord, VerifyDiagnostic } from "../../core/mod.ts";

/** A diagnostic as the CLI prints it (docs/FORMAT.md codes plus the CLI's own, e.g. `unsupported_schema`). */
export type CliDiagnostic = VerifyDiagnostic;

/** Left-aligned columns separated by two spaces; the header row first. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}

/**
 * A count with its noun, singular for one: `1 message`, `2 messages`; `plural` for a noun
 * that does not just take an `s` (`counted(2, "branch", "branches")`).
 */
export function counted(count: number, noun: string, plural = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : plural}`;
}

/** Cuts `text` to `max` characters, ending with `…` when cut. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
}

/** `#seq role: text…` on one line; non-text parts appear as `[tool read]`, `[file a.png]`… */
export function messageLine(message: MessageRecord, max = 200): string {
  const status = message.role === "assistant" && message.status && message.status !== "completed" ? ` (${message.status})` : "";
  const body = message.parts.map(partText).filter((t) => t !== "").join(" ");
  return `#${message.sequence} ${message.role}${status}: ${clip(body.replace(/\s+/g, " ").trim(), max)}`;
}

function partText(part: MessagePart): string {
  switch (part.type) {
    case "text":
      return part.text;
    case "reasoning":
      return "[reasoning]";
    case "reasoning-summary":
      return `[reasoning summary] ${part.text}`;
    case "tool":
      return `[tool ${part.tool_name}${part.state === "output-error" ? " failed" : part.state === "input-available" ? " pending" : ""}]`;
    case "file":
      return `[file ${part.name ?? part.media_type}]`;
    case "provider-context":
      return `[context ${part.provider}/${part.api}/${part.model}]`;
    default:
      return "";
  }
}

/** One indented line per diagnostic: `fatal invalid_json: messages/active.jsonl:3: …`. */
export function diagnosticLines(diagnostics: readonly CliDiagnostic[], indent = "  "): string[] {
  return diagnostics.map((d) => `${indent}${d.fatal ? "fatal" : "note "} ${d.code}: ${withLocation(d)}`);
}

/** The diagnostic's message, prefixed with `FILE:LINE` unless it already starts with its file. */
function withLocation(d: CliDiagnostic): string {
  const where = d.line === null ? d.file : `${d.file}:${d.line}`;
  return d.message.startsWith(d.file) ? d.message : `${where}: ${d.message}`;
}
