import { type ErrorDetails, SessionfoldError, UnsupportedSchemaError } from "../errors.ts";
export { describeValue } from "../schema/excerpt.ts";

/** The foreign formats this module reads, as errors and diagnostics name them. */
export type FormatName = "deepcode" | "rho-snapshot" | "rho-jsonl" | "pi" | "codex" | "claude-code";

/** Where in a foreign file something was found: the file, its 1-based line and a JSON path. */
export interface FormatLocation {
  readonly format: FormatName;
  readonly file: string;
  /** 1-based line number; `null` only when a finding is about no line at all. */
  readonly line: number | null;
  /** JSON path of the offending value inside the line's record or the document, e.g. `$.history[2].User[0]`. */
  readonly path?: string;
}

/** The structured details every {@linkcode FormatError} carries. */
export interface FormatErrorDetails extends ErrorDetails {
  readonly format: FormatName;
  readonly file: string;
  readonly line: number | null;
  readonly path?: string;
  readonly found: string;
  readonly expected: string;
}

/**
 * A foreign session file that cannot be imported as it is: invalid UTF-8 or JSON, a
 * record of the wrong shape, a tool result without its call, a snapshot delta on the
 * wrong base. Code `invalid-input`; the message is `file:line: [path: ]found …; expected …`.
 * Nothing is created when it is thrown and the source bytes are never changed.
 *
 * @example
 * ```ts
 * import { readDeepCode } from "sessionfold";
 *
 * declare const bytes: Uint8Array;
 * try { readDeepCode({ file: "s1.v1.jsonl", bytes }); } catch (e) {
 *   if (e instanceof FormatError) console.error(e.message, e.details.line); // "s1.v1.jsonl:3: …", 3
 * }
 * ```
 */
export class FormatError extends SessionfoldError {
  override readonly name: string = "FormatError";
  /** The file named by the error. */
  readonly file: string;
  /** Its 1-based line, or `null` when the finding is about no single line. */
  readonly line: number | null;
  declare readonly details: FormatErrorDetails;

  constructor(message: string, details: FormatErrorDetails) {
    super("invalid-input", message, details);
    this.file = details.file;
    this.line = details.line;
  }
}

/** `file:line` (or `file`) as messages write a location: `s.v1.jsonl:3`. */
function locationPrefix(where: Pick<FormatLocation, "file" | "line">): string {
  return where.line === null ? where.file : `${where.file}:${where.line}`;
}

/**
 * Builds a {@linkcode FormatError} whose message reads `file:line: path: found X; expected Y`.
 *
 * @example
 * ```ts
 * throw formatError({ format: "deepcode", file: "s.v1.jsonl", line: 4, path: "$.role" }, '"system"', '"user", "assistant" or "tool"');
 * ```
 */
export function formatError(where: FormatLocation, found: string, expected: string, extra: ErrorDetails = {}): FormatError {
  const path = where.path !== undefined && where.path !== "$" ? `${where.path}: ` : "";
  return new FormatError(`${locationPrefix(where)}: ${path}found ${found}; expected ${expected}`, {
    ...extra,
    format: where.format,
    file: where.file,
    line: where.line,
    ...(where.path !== undefined ? { path: where.path } : {}),
    found,
    expected,
  });
}

/**
 * An {@linkcode UnsupportedSchemaError} (code `unsupported-schema`) for a version this
 * reader does not know, located like a {@linkcode FormatError}. It never guesses a migration.
 *
 * @example
 * ```ts
 * throw unsupportedVersion({ format: "rho-snapshot", file: "s.json", line: 2, path: "$.schema_version" }, 3, [1, 2]);
 * ```
 */
export function unsupportedVersion(where: FormatLocation, found: number, supported: readonly number[]): UnsupportedSchemaError {
  const path = where.path !== undefined ? `${where.path}: ` : "";
  const list = supported.length === 1 ? String(supported[0]) : `${supported.slice(0, -1).join(", ")} or ${supported.at(-1)}`;
  return new UnsupportedSchemaError(
    `${locationPrefix(where)}: ${path}found version ${found}; expected ${list} (other versions are refused, never guessed)`,
    {
      format: where.format,
      file: where.file,
      line: where.line,
      ...(where.path !== undefined ? { path: where.path } : {}),
      found,
      supported: [...supported],
    },
  );
}
