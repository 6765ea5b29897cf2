/**
 * The sync protocol's messages (docs/SYNC.md), as types and as the checks a server runs on
 * a request body before it touches the store. Every request and response carries `v`, the
 * protocol version; a body that is not valid is refused with a typed
 * {@linkcode SyncRefusedError} that says which field and what was found.
 *
 * @module
 */
import * as z from "zod";
import { type SyncRefusal, SyncRefusedError } from "../errors.ts";
import { describeValue } from "../schema/excerpt.ts";
import { isValidId } from "../layout/ids.ts";
import { parseSegmentName } from "../layout/segments.ts";
import { describeIssues, MessageRecord, SessionMeta } from "../schema/mod.ts";

/**
 * The protocol version this package speaks (docs/SYNC.md "Versioning"). Version 2: a head
 * names only its newest segment, and a `read` sends the segment names after a position the
 * client gives, so a sync's cost does not grow with the history (version 1 sent every name).
 */
export const SYNC_PROTOCOL_VERSION = 2;

/** `<agent_id>/<workspace_id>/<session_id>`, each a valid id (docs/FORMAT.md "Ids"). */
const Ref = z.string().refine((ref) => {
  const parts = ref.split("/");
  return parts.length === 3 && parts.every(isValidId);
}, "expected <agent_id>/<workspace_id>/<session_id> with valid ids");

const SegmentName = z.string().refine((name) => parseSegmentName(name) !== undefined, "expected a segment name <start>-<end>.jsonl");
const Number_ = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
const Sequence = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const ClientId = z.string().min(1).max(128).regex(/^[A-Za-z0-9_.-]+$/, "expected 1 to 128 characters from A-Z a-z 0-9 _ . -");

/** A segment file as sent: its name and its exact text (docs/FORMAT.md "Segments"). */
export interface SegmentFile {
  readonly name: string;
  readonly text: string;
}

/**
 * An end-to-end encrypted session's records as stored (docs/SYNC.md "End-to-end encrypted
 * sessions"): each a sealed envelope's JSON text (docs/FORMAT.md "Encrypted stores"), and the
 * file inside the session folder it is sealed for.
 */
export interface SealedRecord {
  readonly file: string;
  readonly line: string;
}

/** An encrypted session's documents as stored: `meta.json` and `instruction.md` (absent: `null`), each one envelope. */
export interface SealedDocuments {
  readonly meta: string;
  readonly instruction: string | null;
}

/** The labels of `meta.json` that sync copies as they are (docs/SYNC.md "What is copied"). */
export interface SessionLabels {
  readonly title?: string;
  readonly model_label?: string;
  readonly timezone?: string;
}

const Labels = z.looseObject({ title: z.string().optional(), model_label: z.string().optional(), timezone: z.string().optional() });

/**
 * A session sent whole: `meta.json`'s fields, `instruction.md`, the segments by name and the
 * Active messages (docs/SYNC.md "What is copied": a new session).
 */
export interface CreateMutation {
  readonly number: number;
  readonly op: "create";
  readonly ref: string;
  readonly meta: SessionMeta;
  readonly instruction: string | null;
  readonly segments: readonly SegmentFile[];
  readonly messages: readonly MessageRecord[];
}

/** Messages that follow `base_sequence` (whose message is `base_message_id`) on the sender. */
export interface AppendMutation {
  readonly number: number;
  readonly op: "append";
  readonly ref: string;
  readonly base_sequence: number;
  readonly base_message_id: string | null;
  readonly messages: readonly MessageRecord[];
}

/** A session's `meta.json` labels and `instruction.md` changed on the sender. */
export interface SetMetaMutation {
  readonly number: number;
  readonly op: "set_meta";
  readonly ref: string;
  readonly labels: SessionLabels;
  readonly instruction: string | null;
}

/**
 * A segment the sender closed (a compaction): the receiver takes it when its own newest
 * segment ends right before it and it holds the same messages in Active; otherwise its own
 * segmentation stays (docs/SYNC.md "Compactions").
 */
export interface SegmentMutation {
  readonly number: number;
  readonly op: "segment";
  readonly ref: string;
  readonly segment: SegmentFile;
  /** An encrypted session's `keys.json` (its segment text is sealed). */
  readonly keys?: string;
}

/**
 * An end-to-end encrypted session sent whole, as stored: its `keys.json` (wrapped data keys,
 * in the clear), its sealed documents, its segment files (sealed text) and its Active
 * messages, each sealed for `messages/active.jsonl` of this session.
 */
export interface SealedCreateMutation extends SealedDocuments {
  readonly number: number;
  readonly op: "create_sealed";
  readonly ref: string;
  readonly keys: string;
  readonly segments: readonly SegmentFile[];
  readonly lines: readonly string[];
}

/** Sealed messages (each sealed for `messages/active.jsonl`) that follow `base_sequence` on the sender, with the session's `keys.json`. */
export interface SealedAppendMutation {
  readonly number: number;
  readonly op: "append_sealed";
  readonly ref: string;
  readonly keys: string;
  readonly base_sequence: number;
  readonly base_message_id: string | null;
  readonly lines: readonly string[];
}

/** An encrypted session's `meta.json` and `instruction.md` changed on the sender: the sealed documents, last writer wins. */
export interface SealedSetMetaMutation extends SealedDocuments {
  readonly number: number;
  readonly op: "set_meta_sealed";
  readonly ref: string;
  readonly keys: string;
}

/** The session was archived or deleted on the sender: a tombstone (docs/SYNC.md "What is copied": delete). */
export interface RemoveMutation {
  readonly number: number;
  readonly op: "archive" | "delete";
  readonly ref: string;
}

/** One numbered change of one client (docs/SYNC.md "Push"). */
export type Mutation =
  | CreateMutation
  | AppendMutation
  | SegmentMutation
  | SetMetaMutation
  | RemoveMutation
  | SealedCreateMutation
  | SealedAppendMutation
  | SealedSetMetaMutation;

/** `POST <base>/push`. */
export interface PushRequest {
  readonly v: number;
  readonly client_id: string;
  readonly mutations: readonly Mutation[];
}

/** What became of one mutation (docs/SYNC.md "Results"). */
export interface MutationResult {
  readonly number: number;
  /**
   * `applied`: done now; `duplicate`: done before (a retry), `result` repeats what it did
   * when the server still has it; `forked`: the messages went to the fork `fork`;
   * `rejected`: nothing changed, `reason` says why (the session was deleted; the server
   * lacks messages before `base_sequence`, `last_sequence` saying how far it has them; its
   * message at `base_sequence` is another; its segmentation differs from the segment's; an
   * encrypted session's tail differs from the server's, and the sender makes the fork `fork`
   * itself, sealed, and pushes it).
   */
  readonly status: "applied" | "duplicate" | "forked" | "rejected";
  readonly ref: string;
  readonly fork?: { readonly ref: string; readonly at_sequence: number };
  readonly reason?: "deleted" | "server-behind" | "base-mismatch" | "segmentation" | "diverged";
  /** With `server-behind`: how far the server has the session. With `forked`: the fork's last sequence. */
  readonly last_sequence?: number;
  /** For a duplicate whose first result the server kept: that result. */
  readonly result?: Omit<MutationResult, "result">;
}

/** The answer to a push: one result per mutation, in order. */
export interface PushResponse {
  readonly v: number;
  readonly results: readonly MutationResult[];
}

/**
 * A place in a session's list of segments: its first `count` segments, the last of them named
 * `last` (`0` and `null`: before the first). Segments are immutable and only ever added after
 * the newest, so two sides that have the same segment at the same place have the same list
 * up to it (docs/SYNC.md "Segments by position").
 */
export interface SegmentPosition {
  readonly count: number;
  readonly last: string | null;
}

/** The segment names of a session from the position `after` (how many come before them) on. */
export interface SegmentNames {
  readonly after: number;
  readonly names: readonly string[];
}

/**
 * The names of `names` (a session's segments, oldest first) after `position`; every name,
 * from 0, when the list does not have that segment at that place.
 *
 * @example
 * ```ts
 * segmentNamesAfter(["1-5.jsonl", "6-9.jsonl"], { count: 1, last: "1-5.jsonl" }); // { after: 1, names: ["6-9.jsonl"] }
 * ```
 */
export function segmentNamesAfter(names: readonly string[], position: SegmentPosition): SegmentNames {
  const there = position.count === 0 ? position.last === null : names[position.count - 1] === position.last;
  return there ? { after: position.count, names: names.slice(position.count) } : { after: 0, names: [...names] };
}

/** What a server tells about one session in a pull (docs/SYNC.md "Pull"). */
export interface SessionHead {
  readonly ref: string;
  readonly place: "live" | "archived";
  readonly revision: number;
  readonly last_sequence: number;
  /**
   * The id of the message at `last_sequence` when Active holds it; `null` when there is none
   * or it is in a segment (not read for a head). A device at that sequence compares it
   * without a `read` (docs/SYNC.md "Segments by position").
   */
  readonly last_message_id: string | null;
  /** The name of its newest segment (`null` before the first compaction): the others are asked for with a `read`'s `segments_after`. */
  readonly newest_segment: string | null;
  readonly labels: SessionLabels;
  readonly instruction: string | null;
  /** An end-to-end encrypted session: its `keys.json` and sealed documents (then `labels` is empty and `instruction` null). */
  readonly sealed?: SealedDocuments & { readonly keys: string };
}

/** A deleted session, remembered so other devices delete it too. */
export interface Tombstone {
  readonly ref: string;
  readonly deleted_at: string;
}

/** `POST <base>/pull`: what changed since `cursor` (absent: everything), waiting up to `wait_ms` for a change. */
export interface PullRequest {
  readonly v: number;
  readonly cursor?: string;
  readonly wait_ms?: number;
}

/**
 * A session that changed, or that a pull without a cursor lists, whose copy on the server
 * cannot be served: corrupt, or written by a newer sessionfold (docs/SYNC.md "One session at a time").
 */
export interface RefusedSession {
  readonly ref: string;
  readonly reason: "corrupt" | "unsupported-schema";
  readonly message: string;
}

/** The sessions that changed since the request's cursor, and the cursor to send next. */
export interface PullResponse {
  readonly v: number;
  readonly cursor: string;
  readonly sessions: readonly SessionHead[];
  readonly tombstones: readonly Tombstone[];
  /** Sessions it would list whose server copy cannot be served; absent when there are none. */
  readonly refused?: readonly RefusedSession[];
}

/**
 * `POST <base>/read`: one session's messages after `after_sequence`, at most `limit`.
 * With `expect_message_id`, the server checks that its message at `after_sequence` is that
 * one (`diverged: true` when not). With `segments_after`, the answer's `segments` names the
 * session's segments after that position (all of them when its list does not have that
 * segment there).
 */
export interface ReadRequest {
  readonly v: number;
  readonly ref: string;
  readonly after_sequence: number;
  readonly expect_message_id?: string | null;
  readonly limit?: number;
  readonly segments_after?: SegmentPosition;
}

/**
 * One page of a session: its head, its whole `meta.json`, messages and whether more follow.
 * An encrypted session's page has `sealed` instead of `meta` and `messages`: the stored
 * records of the page (its head has the session's `keys.json`).
 */
export interface ReadResponse {
  readonly v: number;
  readonly head: SessionHead;
  readonly meta?: SessionMeta;
  readonly diverged: boolean;
  readonly messages: readonly MessageRecord[];
  readonly more: boolean;
  readonly sealed?: { readonly records: readonly SealedRecord[] };
  /** With the request's `segments_after`: the names after it (`after` is its `count`), or every name (`after` is 0) when the position is not in the list. */
  readonly segments?: SegmentNames;
}

/** `POST <base>/segment`: one segment file by name. */
export interface SegmentRequest {
  readonly v: number;
  readonly ref: string;
  readonly name: string;
}

/** A segment's exact text. */
export interface SegmentResponse {
  readonly v: number;
  readonly segment: SegmentFile;
}

/** The error body of every refused request. */
export interface ErrorResponse {
  readonly v: number;
  readonly error: { readonly reason: SyncRefusal; readonly message: string; readonly [detail: string]: unknown };
}

/** A committed message: a draft (`streaming`) never travels (docs/SYNC.md "What is copied"). */
const Message = MessageRecord.refine((m) => m.status !== "streaming", "a streaming draft is not a committed message");
const Meta = SessionMeta;

const MutationSchema = z.discriminatedUnion("op", [
  z.object({
    number: Number_,
    op: z.literal("create"),
    ref: Ref,
    meta: Meta,
    instruction: z.string().nullable(),
    segments: z.array(z.object({ name: SegmentName, text: z.string() })),
    messages: z.array(Message),
  }),
  z.object({
    number: Number_,
    op: z.literal("append"),
    ref: Ref,
    base_sequence: Sequence,
    base_message_id: z.string().nullable(),
    messages: z.array(Message).min(1),
  }),
  z.object({ number: Number_, op: z.literal("segment"), ref: Ref, segment: z.object({ name: SegmentName, text: z.string() }), keys: z.string().optional() }),
  z.object({ number: Number_, op: z.literal("set_meta"), ref: Ref, labels: Labels, instruction: z.string().nullable() }),
  z.object({ number: Number_, op: z.enum(["archive", "delete"]), ref: Ref }),
  z.object({
    number: Number_,
    op: z.literal("create_sealed"),
    ref: Ref,
    keys: z.string(),
    meta: z.string(),
    instruction: z.string().nullable(),
    segments: z.array(z.object({ name: SegmentName, text: z.string() })),
    lines: z.array(z.string()),
  }),
  z.object({
    number: Number_,
    op: z.literal("append_sealed"),
    ref: Ref,
    keys: z.string(),
    base_sequence: Sequence,
    base_message_id: z.string().nullable(),
    lines: z.array(z.string()).min(1),
  }),
  z.object({ number: Number_, op: z.literal("set_meta_sealed"), ref: Ref, keys: z.string(), meta: z.string(), instruction: z.string().nullable() }),
]);

const schemas = {
  push: z.object({ v: z.number(), client_id: ClientId, mutations: z.array(MutationSchema).max(1000) }),
  pull: z.object({ v: z.number(), cursor: z.string().max(1 << 20).optional(), wait_ms: z.number().int().min(0).max(60_000).optional() }),
  read: z.object({
    v: z.number(),
    ref: Ref,
    after_sequence: Sequence,
    expect_message_id: z.string().nullable().optional(),
    limit: z.number().int().min(1).max(100_000).optional(),
    segments_after: z
      .object({ count: Sequence, last: SegmentName.nullable() })
      .refine((p) => (p.count === 0) === (p.last === null), "expected count 0 with last null, or a count above 0 with the name of that segment")
      .optional(),
  }),
  segment: z.object({ v: z.number(), ref: Ref, name: SegmentName }),
};

/** The requests a server answers, by route name. */
export interface SyncRequests {
  push: PushRequest;
  pull: PullRequest;
  read: ReadRequest;
  segment: SegmentRequest;
}

/** A route of the protocol. */
export type SyncRoute = keyof SyncRequests;

/** The routes, for a handler that maps paths to them. */
export const SYNC_ROUTES: readonly SyncRoute[] = ["push", "pull", "read", "segment"];

/**
 * Checks a decoded request body: the version first (so a newer client learns it is newer,
 * whatever else changed), then the shape.
 *
 * @example
 * ```ts
 * const request = parseSyncRequest("pull", { v: SYNC_PROTOCOL_VERSION });
 * request.cursor; // undefined
 * ```
 * @throws {SyncRefusedError} `unsupported-version` (400) for another `v`, `malformed` (400) naming the field.
 */
export function parseSyncRequest<R extends SyncRoute>(route: R, body: unknown): SyncRequests[R] {
  const v = (body as { v?: unknown } | null)?.v;
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw refused("malformed", 400, `${route}: expected a JSON object, found ${describeValue(body)}`);
  }
  if (v !== SYNC_PROTOCOL_VERSION) {
    throw refused(
      "unsupported-version",
      400,
      `${route}: protocol version ${JSON.stringify(v) ?? "missing"} is not supported; this server speaks v${SYNC_PROTOCOL_VERSION}`,
      { supported: [SYNC_PROTOCOL_VERSION] },
    );
  }
  const parsed = schemas[route].safeParse(body);
  if (!parsed.success) throw refused("malformed", 400, `${route}: ${describeIssues(parsed.error)}`);
  return parsed.data as unknown as SyncRequests[R];
}

/** A {@linkcode SyncRefusedError} with its reason and status. */
export function refused(reason: SyncRefusal, status: number, message: string, details: Record<string, unknown> = {}): SyncRefusedError {
  return new SyncRefusedError(message, { ...details, reason, status });
}
