import type { Diagnostic } from "../../jsonl/diagnostic.ts";
import type { PortableSession } from "../../model/mod.ts";

/**
 * The DeepCode session layouts: the canonical `<id>.v1.jsonl` stream, and the two legacy
 * read-only ones, `core-v0` (bare `{role, content}` lines plus a camelCase `<id>.meta.json`)
 * and `desktop-v0` (a `session_meta` header without `schema_version`, Unix-seconds times).
 */
export type DeepCodeLayout = "v1" | "core-v0" | "desktop-v0";

/** What {@linkcode readDeepCode} reads: the stream and, for `core-v0`, its `meta.json`. */
export interface DeepCodeInput {
  /** The stream's file name as errors name it, e.g. `abc.v1.jsonl` or `abc.jsonl`. */
  readonly file: string;
  /** The stream's bytes; they are only read, never changed. */
  readonly bytes: Uint8Array;
  /** The `<id>.meta.json` beside a `core-v0` stream. */
  readonly metaBytes?: Uint8Array;
  /** Its file name as errors name it; default: the stream's name with `.jsonl` → `.meta.json`. */
  readonly metaFile?: string;
  /**
   * The layout the file must have (as {@linkcode detectDeepCodeLayout} found it). Default:
   * `v1` for a `*.v1.jsonl` name, else detected from the first line (`session_meta` with
   * `schema_version` → `v1`, without → `desktop-v0`, anything else with `metaBytes` → `core-v0`).
   */
  readonly layout?: DeepCodeLayout;
}

/** What {@linkcode readDeepCode} found. */
export interface DeepCodeReadResult {
  /** The session in the format-neutral shape `Sessions.importPortable` takes. */
  readonly session: PortableSession;
  /** Non-fatal findings: a `truncated_tail` when the final line was an interrupted append. */
  readonly diagnostics: Diagnostic[];
  /** The layout that was read. */
  readonly layout: DeepCodeLayout;
}

/** One file of a DeepCode sessions folder, as {@linkcode detectDeepCodeLayout} takes them. */
export interface DeepCodeFile {
  /** Its name (a path is allowed; only the last segment counts). */
  readonly name: string;
  readonly bytes: Uint8Array;
}

/** A session found among DeepCode files: pass it straight to {@linkcode readDeepCode}. */
export interface DeepCodeDetection extends DeepCodeInput {
  readonly layout: DeepCodeLayout;
  /** The logical session id (the `<id>` of the file names). */
  readonly id: string;
}
