import { assertId, type SessionRef } from "./ids.ts";
import { formatSegmentName, type SegmentRange } from "./segments.ts";

/** Every path of one session folder (docs/FORMAT.md), relative to the store root. */
export interface SessionPaths {
  /** The session folder. */
  readonly dir: string;
  readonly meta: string;
  readonly instruction: string;
  readonly lock: string;
  readonly messagesDir: string;
  readonly active: string;
  readonly draft: string;
  readonly segmentsDir: string;
  /** Path of the segment file holding `range`. */
  segment(range: SegmentRange): string;
}

/** Where a session lives: `sessions/` (live) or `archived-sessions/`. */
export type SessionPlace = "live" | "archived";

/**
 * `agents/<agent_id>`.
 *
 * @example
 * ```ts
 * agentDir("coder"); // "agents/coder"
 * ```
 * @throws {InvalidIdError} when the id is not valid.
 */
export function agentDir(agentId: string): string {
  assertId("agent_id", agentId);
  return `agents/${agentId}`;
}

/**
 * `agents/<agent_id>/agent.jsonc`: the agent definition.
 *
 * @example
 * ```ts
 * agentConfigPath("coder"); // "agents/coder/agent.jsonc"
 * ```
 * @throws {InvalidIdError} when the id is not valid.
 */
export function agentConfigPath(agentId: string): string {
  return `${agentDir(agentId)}/agent.jsonc`;
}

/**
 * `agents/<agent_id>/workspaces`.
 *
 * @example
 * ```ts
 * workspacesDir("coder"); // "agents/coder/workspaces"
 * ```
 * @throws {InvalidIdError} when the id is not valid.
 */
export function workspacesDir(agentId: string): string {
  return `${agentDir(agentId)}/workspaces`;
}

/**
 * The folder holding a workspace's sessions (`sessions/` or `archived-sessions/`).
 *
 * @example
 * ```ts
 * sessionsDir("coder", "repo"); // "agents/coder/workspaces/repo/sessions"
 * sessionsDir("coder", "repo", "archived"); // "agents/coder/workspaces/repo/archived-sessions"
 * ```
 * @throws {InvalidIdError} when an id is not valid.
 */
export function sessionsDir(agentId: string, workspaceId: string, place: SessionPlace = "live"): string {
  assertId("workspace_id", workspaceId);
  return `${workspacesDir(agentId)}/${workspaceId}/${place === "live" ? "sessions" : "archived-sessions"}`;
}

/**
 * Every path of a session, validated before any is built.
 *
 * @example
 * ```ts
 * sessionPaths({ agentId: "a1", workspaceId: "w1", sessionId: "s1" }).active;
 * // "agents/a1/workspaces/w1/sessions/s1/messages/active.jsonl"
 * ```
 * @throws {InvalidIdError} when an id is not valid.
 */
export function sessionPaths(ref: SessionRef, place: SessionPlace = "live"): SessionPaths {
  assertId("session_id", ref.sessionId);
  const dir = `${sessionsDir(ref.agentId, ref.workspaceId, place)}/${ref.sessionId}`;
  const messagesDir = `${dir}/messages`;
  const segmentsDir = `${messagesDir}/segments`;
  return {
    dir,
    meta: `${dir}/meta.json`,
    instruction: `${dir}/instruction.md`,
    lock: `${dir}/writer.lock`,
    messagesDir,
    active: `${messagesDir}/active.jsonl`,
    draft: `${messagesDir}/assistant_message.json`,
    segmentsDir,
    segment: (range) => `${segmentsDir}/${formatSegmentName(range)}`,
  };
}

/**
 * A path inside a session folder, relative to that folder (as diagnostics name files).
 *
 * @example
 * ```ts
 * const paths = sessionPaths({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
 * relativeToSession(paths, paths.active); // "messages/active.jsonl"
 * ```
 */
export function relativeToSession(paths: SessionPaths, path: string): string {
  return path.startsWith(`${paths.dir}/`) ? path.slice(paths.dir.length + 1) : path;
}
