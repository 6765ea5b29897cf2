/**
 * The local store's sync state for one remote ({@linkcode SyncState}, `sync/remotes/<remote>.json`):
 * the outbox of numbered mutations, the cursor, and what both sides agreed on per session
 * (docs/SYNC.md "The engine"), with where it is kept and how a stored one is read.
 *
 * @module
 */
import type { Mutation, SealedDocuments, SegmentPosition, SessionLabels } from "./protocol.ts";

/** What the local store last agreed with the remote about a session. */
export interface KnownSession {
  last_sequence: number;
  last_message_id: string | null;
  labels: SessionLabels;
  instruction: string | null;
  place: "live" | "archived";
  /**
   * How far both sides have the same segments: a count and the last one's name (a list of
   * every name grew with the history; docs/SYNC.md "Segments by position").
   */
  segments: SegmentPosition;
  /** The server forked this session's local tail or refused its segmentation: re-read it. */
  reread?: boolean;
  /**
   * The fork that took this session's local tail, and the tail's last sequence: later local
   * messages continue there. `at`: an encrypted session's fork this device still has to make
   * (the last shared sequence), sealed for the fork, before it pushes it.
   */
  fork?: { ref: string; through: number; at?: number };
  /**
   * A run set this session aside while the remote's head of it changed: the next run asks for
   * its head again, as the cursor no longer lists it (docs/SYNC.md "One session at a time").
   */
  recheck?: boolean;
  /** An encrypted session: the sealed documents and `keys.json` both sides agreed on (`labels` and `instruction` stay empty). */
  sealed?: SealedDocuments & { keys: string };
}

/** The local store's sync state for one remote: the outbox and the cursor. */
export interface SyncState {
  client_id: string;
  next_number: number;
  pending: Mutation[];
  cursor?: string;
  sessions: Record<string, KnownSession>;
  /**
   * Sessions the remote listed that this device never agreed on and a run set aside (the
   * remote's copy could not be served, the local one could not be read): the cursor passed
   * them, so the next pull asks for their heads (docs/SYNC.md "One session at a time").
   */
  unseen?: string[];
}

/** Before the first segment. */
export const NO_SEGMENTS: SegmentPosition = { count: 0, last: null };

/** The position after `names`, which follow `position`. */
export function positionAfter(position: SegmentPosition, names: readonly string[]): SegmentPosition {
  return names.length === 0 ? position : { count: position.count + names.length, last: names.at(-1)! };
}

/**
 * A sync state as stored. A state written before segment positions (version 1 of the
 * protocol) named every agreed segment: its count and last name are the position.
 */
export function stateOf(stored: SyncState): SyncState {
  for (const known of Object.values(stored.sessions)) {
    const segments: unknown = known.segments;
    if (Array.isArray(segments)) known.segments = positionAfter(NO_SEGMENTS, segments as string[]);
  }
  return stored;
}

/** The folder of every remote's sync state. */
export const SYNC_STATES = "sync/remotes";
/** The folder of every remote's outbox files. */
export const SYNC_PENDING = "sync/pending";

/** The lock a sync run of this store holds, whatever its remote (docs/SYNC.md "The engine"). */
export const SYNC_LOCK_PATH = "sync/run.lock";

/** Where the local store keeps its sync state for the remote `remoteId` (docs/SYNC.md "The engine"). */
export function syncStatePath(remoteId: string): string {
  return `${SYNC_STATES}/${remoteKey(remoteId)}.json`;
}

/** The folder of the outbox's mutations kept apart from the state for the remote `remoteId` (docs/FORMAT.md "Sync's entries"). */
export function syncPendingFolder(remoteId: string): string {
  return `${SYNC_PENDING}/${remoteKey(remoteId)}`;
}

/** A file name for a remote's id: its characters kept where they are safe, the rest hex-escaped. */
function remoteKey(id: string): string {
  return Array.from(
    new TextEncoder().encode(id),
    (b) => (/[A-Za-z0-9_-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `.${b.toString(16).padStart(2, "0")}`),
  ).join("").slice(0, 200);
}
