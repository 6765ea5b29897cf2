/**
 * File access for the agent formats the CLI imports by streaming (pi, Codex, Claude
 * Code): the file is read in chunks, never whole, and its first bytes tell its format
 * when `--from` is not given.
 *
 * @module
 */
import { createReadStream } from "node:fs";
import { open } from "node:fs/promises";
import { basename } from "node:path";
import { InvalidInputError, NotFoundError, detectSessionFormat, readClaudeCode, readCodex, readPi, type Diagnostic, type FormatDetection, type PortableSession } from "../../core/mod.ts";

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
  await head(file, 1); // a missing or unreadable file is named before any reading starts
  const chunks = createReadStream(file, { highWaterMark: 1 << 20 });
  const name = basename(file);
  try {
    if (format === "pi") return await readPi(chunks, name);
    if (format === "codex") return await readCodex(chunks, name);
    return await readClaudeCode(chunks, name);
  } finally {
    chunks.destroy();
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
  return detectSessionFormat(await head(file, HEAD_BYTES));
}

async function head(file: string, bytes: number): Promise<Uint8Array> {
  let handle;
  try {
    handle = await open(file, "r");
    const buffer = new Uint8Array(bytes);
    const { bytesRead } = await handle.read(buffer, 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "ENOENT") throw new NotFoundError(`${file}: no such file`, { file });
    throw new InvalidInputError(`${file}: cannot be read (${code ?? (error as Error).message})`, { file });
  } finally {
    await handle?.close();
  }
}
