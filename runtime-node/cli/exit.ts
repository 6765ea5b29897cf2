/**
 * Errors to exit statuses and to the one-line / JSON shapes of docs/CLI.md.
 *
 * @module
 */
// The errors alone, not the core's entry points: `--help` and usage errors print without
// loading the core (docs/ARCHITECTURE.md "What each entry point is").
import { asSessionfoldError, type ErrorCode, SessionfoldError } from "../../core/errors.ts";
import { escapeControls } from "./io.ts";

/** Exit statuses of docs/CLI.md. */
export const EXIT = {
  ok: 0,
  /** A read-only check found fatal diagnostics. */
  fatalDiagnostics: 1,
  /** `sync` finished but left sessions unsynced (its conflicts). */
  notSynced: 1,
  usage: 2,
  /** Locked by another writer, or the revision moved. */
  locked: 3,
  badInput: 4,
  other: 5,
} as const;

/** Bad usage: an unknown command or option, a missing or malformed argument. */
export class UsageError extends SessionfoldError {
  override readonly name: string = "UsageError";
  constructor(message: string, details: Record<string, unknown> = {}) {
    super("usage", message, details);
  }
}

/** The exit status an error code maps to (docs/CLI.md "Exit status"). */
export function exitStatusOf(code: ErrorCode): number {
  switch (code) {
    case "usage":
      return EXIT.usage;
    case "writer-locked":
    case "revision-conflict":
      return EXIT.locked;
    case "invalid-id":
    case "not-found":
    case "unsupported-schema":
    case "corrupt":
    case "invalid-input":
    case "key-required":
    case "wrong-key":
      return EXIT.badInput;
    default:
      return EXIT.other;
  }
}

/** `error[<code>]: <what and where>` on one line. */
export function errorLine(error: SessionfoldError): string {
  return `error[${error.code}]: ${escapeControls(oneLine(error.message), { oneLine: true })}`;
}

/**
 * `{"error":{"code","message",...details}}`. A detail named `code` (a diagnostic code
 * carried by a core error) is renamed `diagnostic` so it cannot hide the error code.
 */
export function errorDocument(error: SessionfoldError): { error: Record<string, unknown> } {
  const { code: inner, message: _message, name: _name, ...details } = error.details;
  return {
    error: {
      code: error.code,
      message: oneLine(error.message),
      ...(inner !== undefined && details["diagnostic"] === undefined ? { diagnostic: inner } : {}),
      ...jsonSafe(details),
    },
  };
}

/** Any thrown value as a typed error (`internal` when it is not one). */
export function toCliError(error: unknown): SessionfoldError {
  return asSessionfoldError(error, "sessionfold");
}

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, " ").trim();
}

function jsonSafe(details: Record<string, unknown>): Record<string, unknown> {
  try {
    return JSON.parse(JSON.stringify(details)) as Record<string, unknown>;
  } catch {
    return {};
  }
}
