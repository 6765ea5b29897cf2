/**
 * Import and export of other systems' session files, to and from the format-neutral
 * `PortableSession` that `Sessions.importPortable` takes and
 * `Session.exportPortable` gives:
 *
 * - DeepCode Session Format v1 (`<id>.v1.jsonl`), read and written, and its two legacy
 *   layouts `core-v0` and `desktop-v0`, read only ({@linkcode detectDeepCodeLayout},
 *   {@linkcode readDeepCode}, {@linkcode writeDeepCodeV1});
 * - Rho `SessionSnapshot` JSON, schema 2 read and written, schema 1 read and migrated
 *   ({@linkcode readRhoSnapshot}, {@linkcode writeRhoSnapshot});
 * - Rho application JSONL sessions, versions 1 to 4 (a tree: the active branch), read ({@linkcode readRhoJsonl});
 * - pi-coding-agent sessions, read (the active branch) and written ({@linkcode readPi},
 *   {@linkcode writePi}); OpenAI Codex CLI rollouts ({@linkcode readCodex}) and Claude Code
 *   transcripts (the main chain, {@linkcode readClaudeCode}), read. These three stream: a
 *   file is read in chunks, never held whole. {@linkcode detectSessionFormat} tells every
 *   format here apart from a file's first line.
 *
 * Readers never change the source bytes. A torn final JSONL line (no newline, not a valid
 * record) is ignored and reported; any other invalid input is a {@linkcode FormatError}
 * naming the file and 1-based line, and an unknown version an `UnsupportedSchemaError`:
 * nothing is created. Every field read and written is listed in `core/formats/README.md`.
 *
 * @example
 * ```ts
 * import { Sessions } from "sessionfold";
 * declare const sessions: Sessions;
 *
 * import { readDeepCode, writeRhoSnapshot } from "sessionfold";
 * declare const bytes: Uint8Array;
 * const { session: portable } = readDeepCode({ file: "abc.v1.jsonl", bytes });
 * const imported = await sessions.importPortable("a1/w1/abc", portable);
 * const snapshot = writeRhoSnapshot(await imported.exportPortable());
 * ```
 * @module
 */

export { FormatError, type FormatErrorDetails, type FormatLocation, type FormatName } from "./errors.ts";
export type { FormatWriteOptions, PartOmission } from "./omission.ts";
export type { DeepCodeDetection, DeepCodeFile, DeepCodeInput, DeepCodeLayout, DeepCodeReadResult } from "./deepcode/types.ts";
export { detectDeepCodeLayout } from "./deepcode/detect.ts";
export { readDeepCode } from "./deepcode/read.ts";
export { type DeepCodeWriteOptions, writeDeepCodeV1 } from "./deepcode/write.ts";
export { readRhoSnapshot, type RhoSnapshotReadOptions, UNKNOWN_PROVIDER, writeRhoSnapshot } from "./rho/snapshot.ts";
export { readRhoJsonl, RHO_JSONL_VERSIONS, type RhoJsonlReadOptions, type RhoJsonlReadResult } from "./rho/jsonl.ts";
export type { RhoTreeSummary } from "./rho/tree.ts";
export { RHO_SNAPSHOT_VERSION, RHO_SNAPSHOT_VERSIONS } from "./rho/snapshot-object.ts";
export { RHO_EXTENSION_FIELD, type RhoMessageExtension, type RhoPartialToolCall, type RhoUsage } from "./rho/types.ts";
export { type JsonlSource, readJsonlStream } from "./jsonl-lines.ts";
export { type PiReadResult, readPi } from "./pi/read.ts";
export { PI_WRITE_VERSION, type PiWriteOptions, writePi } from "./pi/write.ts";
export { PI_SESSION_VERSIONS } from "./pi/entries.ts";
export { PI_EXTENSION_FIELD, type PiMessageExtension } from "./pi/types.ts";
export { CODEX_EXTENSION_FIELD, type CodexReadResult, readCodex } from "./codex/read.ts";
export { CLAUDE_CODE_EXTENSION_FIELD, type ClaudeCodeReadResult, readClaudeCode } from "./claude-code/read.ts";
export { type DetectedFormat, detectSessionFormat, type FormatDetection } from "./detect.ts";
