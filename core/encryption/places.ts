/**
 * Which storage keys an encrypted store seals, and how (docs/FORMAT.md "Encrypted stores"):
 * every file of a session folder except its `writer.lock` (and reclaim guards) and its wrapped
 * data keys; a JSONL file record by record, any other file whole.
 *
 * @module
 */
import { parseSegmentName, type SegmentRange } from "../layout/segments.ts";
import { type ClearFields, DRAFT_CLEAR_FIELDS, META_CLEAR_FIELDS, NO_CLEAR_FIELDS, type SealPlace } from "./envelope.ts";

/** The store-level marker: present exactly when the store is encrypted. */
export const STORE_MARKER = "encryption.json";
/** A session's wrapped data keys, beside its `meta.json`. */
export const SESSION_KEYS_FILE = "keys.json";

const SESSION_PATH = /^(agents\/([^/]+)\/workspaces\/([^/]+)\/(?:sessions|archived-sessions)\/([^/]+))(?:\/(.+))?$/;
/** A session being built before it is moved into place (`.fork-<id>-t_<hex>`, `.import-…`): it is sealed for the session it becomes. */
const STAGING_NAME = /^\.[a-z]+-(.+)-t_[0-9a-f]{32}$/;

/** How a path is stored. */
export type SealedKind =
  /** Not a session's content (`writer.lock`, `keys.json`, the agent definition, anything outside a session): stored as given. */
  | { readonly kind: "clear" }
  /** A JSONL file: each line is an envelope. */
  | { readonly kind: "lines"; readonly dir: string; readonly place: SealPlace; readonly segment?: SegmentRange; readonly ordered: boolean }
  /** A document: the whole file is one envelope. */
  | { readonly kind: "document"; readonly dir: string; readonly place: SealPlace; readonly fields: ClearFields; readonly quarantined: boolean };

/**
 * The session folder `path` is (not inside), with the session it seals for, or `undefined`.
 *
 * @example
 * ```ts
 * sessionFolderOf("agents/a1/workspaces/w1/sessions/.fork-s2-t_0123456789abcdef0123456789abcdef");
 * // { dir: "agents/…/.fork-s2-t_…", session: "a1/w1/s2" }
 * ```
 */
export function sessionFolderOf(path: string): { dir: string; session: string } | undefined {
  const match = SESSION_PATH.exec(path);
  if (!match || match[5] !== undefined) return undefined;
  return { dir: match[1]!, session: sessionName(match[2]!, match[3]!, match[4]!) };
}

function sessionName(agentId: string, workspaceId: string, folder: string): string {
  return `${agentId}/${workspaceId}/${STAGING_NAME.exec(folder)?.[1] ?? folder}`;
}

/**
 * How `path` is stored in an encrypted store.
 *
 * @example
 * ```ts
 * sealedKindOf("agents/a1/workspaces/w1/sessions/s1/writer.lock").kind; // "clear"
 * ```
 */
export function sealedKindOf(path: string): SealedKind {
  const match = SESSION_PATH.exec(path);
  const file = match?.[5];
  if (!match || file === undefined) return { kind: "clear" };
  if (file === "writer.lock" || file.startsWith("writer.lock.") || file === SESSION_KEYS_FILE) return { kind: "clear" };
  const dir = match[1]!;
  const place = { session: sessionName(match[2]!, match[3]!, match[4]!), file };
  if (file.endsWith(".jsonl")) {
    const segment = file.startsWith("messages/segments/") ? parseSegmentName(file.slice("messages/segments/".length)) : undefined;
    return { kind: "lines", dir, place, ordered: file.startsWith("messages/"), ...(segment ? { segment } : {}) };
  }
  const fields = file === "meta.json" ? META_CLEAR_FIELDS : file === "messages/assistant_message.json" ? DRAFT_CLEAR_FIELDS : NO_CLEAR_FIELDS;
  return { kind: "document", dir, place, fields, quarantined: file.startsWith("quarantine/") };
}
