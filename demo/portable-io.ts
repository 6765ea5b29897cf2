/**
 * Import and export files: DeepCode v1 streams, Rho snapshots and pi sessions (both ways),
 * Rho JSONL, Codex and Claude Code sessions (import), through the core's readers and writers
 * (`core/formats`) and its export policy (`core/export`).
 */
import {
  detectSessionFormat,
  type Diagnostic,
  type ExportReport,
  type PortableSession,
  prepareExport,
  readClaudeCode,
  readCodex,
  readDeepCode,
  readPi,
  readRhoJsonl,
  readRhoSnapshot,
  writeDeepCodeV1,
  writePi,
  writeRhoSnapshot,
} from "../core/mod.ts";

/** The formats the playground exports. */
export type ExportFormat = "rho" | "deepcode" | "pi";

/** Whether a format records the folder the session worked in (a DeepCode v1 stream and a pi session do). */
export function needsCwd(format: ExportFormat): boolean {
  return format !== "rho";
}

/** A file read for import. */
export interface ReadImport {
  readonly session: PortableSession;
  readonly format: string;
  readonly diagnostics: readonly Diagnostic[];
}

/**
 * Reads a file picked for import, by its content: a pi session, a Codex rollout or a
 * Claude Code transcript (told apart by `detectSessionFormat`), one JSON document (a Rho
 * snapshot), a JSONL stream whose first record is a Rho `session` header (a Rho
 * application session), or else a DeepCode stream (v1, or a legacy layout).
 *
 * @throws {FormatError} naming the file, line and path of what is wrong; nothing is imported.
 * @throws {UnsupportedSchemaError} for a version the reader does not know.
 */
export async function readImportFile(name: string, bytes: Uint8Array): Promise<ReadImport> {
  const agent = detectSessionFormat(bytes.subarray(0, 64 * 1024))?.format;
  if (agent === "pi") return { ...(await readPi(bytes, name)), format: "pi" };
  if (agent === "codex") return { ...(await readCodex(bytes, name)), format: "Codex" };
  if (agent === "claude-code") return { ...(await readClaudeCode(bytes, name)), format: "Claude Code" };
  const kind = sniff(bytes);
  if (kind === "rho-snapshot") return { session: readRhoSnapshot(bytes, name), format: "Rho snapshot", diagnostics: [] };
  if (kind === "rho-jsonl") {
    const { session, diagnostics } = readRhoJsonl(bytes, name);
    return { session, format: "Rho JSONL", diagnostics };
  }
  const { session, diagnostics, layout } = readDeepCode({ file: name, bytes });
  return { session, format: layout === "v1" ? "DeepCode v1" : `DeepCode (${layout})`, diagnostics };
}

function sniff(bytes: Uint8Array): "rho-snapshot" | "rho-jsonl" | "deepcode" {
  const text = new TextDecoder().decode(bytes).replace(/^\uFEFF/, "");
  const firstLine = text.split("\n").find((line) => line.trim() !== "") ?? "";
  const type = typeOf(firstLine);
  if (type === "session_meta") return "deepcode";
  if (type === "session") return "rho-jsonl";
  try {
    const whole: unknown = JSON.parse(text);
    if (whole !== null && typeof whole === "object" && !Array.isArray(whole) && "schema_version" in whole) return "rho-snapshot";
  } catch {
    // Not one JSON document: a stream.
  }
  return "deepcode";
}

function typeOf(line: string): unknown {
  try {
    const record: unknown = JSON.parse(line);
    return record !== null && typeof record === "object" ? (record as { type?: unknown }).type : undefined;
  } catch {
    return undefined;
  }
}

/** An export ready to download. */
export interface PreparedDownload {
  readonly bytes: Uint8Array;
  readonly fileName: string;
  readonly mediaType: string;
  readonly report: ExportReport;
}

/**
 * Applies the export choices and writes the file's bytes. `cwd` is the folder a DeepCode v1
 * stream or a pi session records, when the session has none of its own (or to replace it).
 *
 * @throws {InvalidInputError} for a DeepCode v1 or pi export with no cwd, given or kept.
 */
export function prepareDownload(
  portable: PortableSession,
  options: { format: ExportFormat; redact: boolean; dropSystemPrompt: boolean; cwd?: string },
): PreparedDownload {
  const { session, report } = prepareExport(portable, { redact: options.redact, dropSystemPrompt: options.dropSystemPrompt });
  const base = (portable.sourceId ?? "session").replace(/[^A-Za-z0-9_.-]/g, "_");
  const where = options.cwd !== undefined ? { cwd: options.cwd } : {};
  if (options.format === "rho") {
    return { bytes: writeRhoSnapshot(session), fileName: `${base}.snapshot.json`, mediaType: "application/json", report };
  }
  if (options.format === "pi") {
    // pi names its files <header timestamp with ":" and "." as "-">_<session id>.jsonl.
    const stamp = (session.createdAt ?? session.messages[0]?.created_at ?? "").replace(/[:.]/g, "-");
    return { bytes: writePi(session, where), fileName: `${stamp ? `${stamp}_` : ""}${base}.jsonl`, mediaType: "application/x-ndjson", report };
  }
  return { bytes: writeDeepCodeV1(session, where), fileName: `${base}.v1.jsonl`, mediaType: "application/x-ndjson", report };
}

/** Starts a browser download of `bytes`. */
export function download(prepared: Pick<PreparedDownload, "bytes" | "fileName" | "mediaType">): void {
  const blob = new Blob([prepared.bytes as Uint8Array<ArrayBuffer>], { type: prepared.mediaType });
  const url = URL.createObjectURL(blob);
  const anchor = document.createElement("a");
  anchor.href = url;
  anchor.download = prepared.fileName;
  anchor.rel = "noopener";
  document.body.append(anchor);
  anchor.click();
  anchor.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
