/**
 * File access for the agent formats the CLI imports by streaming (pi, Codex, Claude
 * Code): the file is read in chunks, never whole, and its first bytes tell its format
 * when `--from` is not given.
 *
 * @module
 */
import { basename } from "node:path";
import {
  detectSessionFormat,
  type Diagnostic,
  type FormatDetection,
  InvalidInputError,
  type PortableSession,
  readClaudeCode,
  readCodex,
  readPi,
} from "../../core/mod.ts";
import { decodeUtf8Strict, firstLine } from "../../core/internal.ts";
import { openInputFile } from "../fs-boundary.ts";

/** The formats read by streaming. */
export const STREAMED_FORMATS = ["pi", "codex", "claude-code"] as const;
/** One of {@linkcode STREAMED_FORMATS}. */
export type StreamedFormat = (typeof STREAMED_FORMATS)[number];

/** How much of a file detection looks at: far more than any first line needs. */
const HEAD_BYTES = 64 * 1024;

/**
 * Reads a pi, Codex or Claude Code file by streaming it.
 *
 * @example
 * ```ts
 * const { session, diagnostics } = await readStreamed("codex", "/tmp/rollout.jsonl");
 * ```
 * @throws {NotFoundError} when there is no such file; {@linkcode FormatError} as the reader finds.
 */
export async function readStreamed(format: StreamedFormat, file: string): Promise<{ session: PortableSession; diagnostics: readonly Diagnostic[] }> {
  // A missing file, a FIFO or a device is refused before any reading starts.
  const { handle } = await openInputFile(file);
  const chunks = handle.createReadStream({ highWaterMark: 1 << 20 });
  const name = basename(file);
  try {
    if (format === "pi") return await readPi(chunks, name);
    if (format === "codex") return await readCodex(chunks, name);
    return await readClaudeCode(chunks, name);
  } finally {
    chunks.destroy();
    await handle.close().catch(() => undefined);
  }
}

/**
 * Detects a file's format from its first bytes, or `undefined` when it matches none.
 *
 * @example
 * ```ts
 * await detectFileFormat("/tmp/rollout.jsonl"); // { format: "codex", reason: "…" }
 * ```
 * @throws {NotFoundError} when there is no such file.
 */
export async function detectFileFormat(file: string): Promise<FormatDetection | undefined> {
  const bytes = await head(file, HEAD_BYTES);
  const detected = detectSessionFormat(bytes);
  const first = detected ? undefined : firstLine(bytes);
  // A first line that is not UTF-8 is bad input at a known line, as a reader would say it.
  if (first && first.bytes.length < HEAD_BYTES && !decodeUtf8Strict(first.bytes).ok) {
    throw new InvalidInputError(`${basename(file)}:${first.line}: found bytes that are not UTF-8; expected one UTF-8 JSON object per line`, {
      file: basename(file),
      line: first.line,
      found: "bytes that are not UTF-8",
    });
  }
  return detected;
}

async function head(file: string, bytes: number): Promise<Uint8Array> {
  const { handle } = await openInputFile(file);
  try {
    const buffer = new Uint8Array(bytes);
    const { bytesRead } = await handle.read(buffer, 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } catch (error) {
    throw new InvalidInputError(`${file}: cannot be read (${(error as { code?: string }).code ?? (error as Error).message})`, { file });
  } finally {
    await handle.close();
  }
}
