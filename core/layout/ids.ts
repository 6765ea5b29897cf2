import { InvalidIdError } from "../errors.ts";

/** Which id a value was meant to be, for error messages. */
export type IdKind = "agent_id" | "workspace_id" | "session_id";

/**
 * Whether `value` is an id: 1 to 128 characters of `[A-Za-z0-9_.-]`, not starting with `.`
 * (the pattern `^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$`, as a loop: a regular expression is
 * compiled at its first uses in a process, on the path of every first open).
 */
function isId(value: string): boolean {
  if (value.length === 0 || value.length > 128 || value.charCodeAt(0) === 0x2e) return false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (!((c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c === 0x5f || c === 0x2d || c === 0x2e)) return false;
  }
  return true;
}

/**
 * Checks an id against docs/FORMAT.md: 1 to 128 characters of `[A-Za-z0-9_.-]`, not starting with `.`.
 *
 * @example
 * ```ts
 * assertId("session_id", "s1"); // ok
 * assertId("session_id", "../x"); // throws InvalidIdError
 * ```
 * @throws {InvalidIdError} naming the id kind and the value found.
 */
export function assertId(kind: IdKind, value: unknown): asserts value is string {
  if (typeof value !== "string" || !isId(value)) throw invalidId(kind, value);
}

/** The error for a value that is not an id (apart: a valid id never runs it). */
function invalidId(kind: IdKind, value: unknown): InvalidIdError {
  const shown = typeof value === "string" ? JSON.stringify(value.length > 140 ? `${value.slice(0, 140)}…` : value) : describeNonString(value);
  return new InvalidIdError(
    `invalid ${kind} ${shown}: expected 1 to 128 characters of [A-Za-z0-9_.-], not starting with '.'`,
    { kind, value: typeof value === "string" ? value : null },
  );
}

/** A short, never-throwing description of a value that is not a string (`String()` throws for some objects). */
function describeNonString(value: unknown): string {
  if (value === null) return "(null)";
  if (value === undefined) return "(nothing)";
  if (typeof value === "object" || typeof value === "function" || typeof value === "symbol") return `(${typeof value})`;
  return `(${typeof value} ${String(value)})`;
}

/**
 * `true` when `value` is a valid id (see {@linkcode assertId}).
 *
 * @example
 * ```ts
 * isValidId("coder"); // true
 * isValidId("../etc"); // false
 * ```
 */
export function isValidId(value: unknown): value is string {
  return typeof value === "string" && isId(value);
}

/** Identifies one session: `<agent_id>/<workspace_id>/<session_id>`. */
export interface SessionRef {
  readonly agentId: string;
  readonly workspaceId: string;
  readonly sessionId: string;
}

/**
 * Parses and validates a `REF` string of the CLI: `<agent_id>/<workspace_id>/<session_id>`.
 *
 * @example
 * ```ts
 * parseSessionRef("a1/w1/s1"); // { agentId: "a1", workspaceId: "w1", sessionId: "s1" }
 * ```
 * @throws {InvalidIdError} when it has not three parts or a part is not a valid id.
 */
export function parseSessionRef(ref: string): SessionRef {
  if (typeof ref !== "string") {
    throw new InvalidIdError(`invalid session reference ${describeNonString(ref)}: expected <agent_id>/<workspace_id>/<session_id>`, { value: null });
  }
  const parts = ref.split("/");
  if (parts.length !== 3) {
    throw new InvalidIdError(`invalid session reference ${JSON.stringify(ref)}: expected <agent_id>/<workspace_id>/<session_id>`, { value: ref });
  }
  return sessionRef(parts[0]!, parts[1]!, parts[2]!);
}

/**
 * Builds a validated {@linkcode SessionRef}.
 *
 * @example
 * ```ts
 * sessionRef("coder", "repo", "s1"); // { agentId: "coder", workspaceId: "repo", sessionId: "s1" }
 * ```
 * @throws {InvalidIdError} when an id is not valid.
 */
export function sessionRef(agentId: string, workspaceId: string, sessionId: string): SessionRef {
  assertId("agent_id", agentId);
  assertId("workspace_id", workspaceId);
  assertId("session_id", sessionId);
  return { agentId, workspaceId, sessionId };
}

/**
 * A session ref given as a {@linkcode SessionRef} or its `REF` text, validated: what every
 * method taking a session accepts.
 *
 * @example
 * ```ts
 * toSessionRef("a1/w1/s1"); // { agentId: "a1", workspaceId: "w1", sessionId: "s1" }
 * toSessionRef({ agentId: "a1", workspaceId: "w1", sessionId: "s1" }); // the same
 * ```
 * @throws {InvalidIdError} when it is neither (no argument, `null`, a number) or an id is not valid.
 */
export function toSessionRef(ref: SessionRef | string): SessionRef {
  if (typeof ref === "string") return parseSessionRef(ref);
  if (typeof ref !== "object" || ref === null) {
    throw new InvalidIdError(
      `invalid session reference ${
        describeNonString(ref)
      }: expected a SessionRef { agentId, workspaceId, sessionId } or <agent_id>/<workspace_id>/<session_id>`,
      {
        value: null,
      },
    );
  }
  return sessionRef(ref.agentId, ref.workspaceId, ref.sessionId);
}

/**
 * The `REF` string of a session.
 *
 * @example
 * ```ts
 * formatSessionRef({ agentId: "coder", workspaceId: "repo", sessionId: "s1" }); // "coder/repo/s1"
 * ```
 */
export function formatSessionRef(ref: SessionRef): string {
  return `${ref.agentId}/${ref.workspaceId}/${ref.sessionId}`;
}
