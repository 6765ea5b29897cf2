import { accumulateCompaction, estimateTextTokens, estimateTokens, planCompaction, type CompactionOutcome } from "../compaction/mod.ts";
import { compose, type ComposedInput } from "../composer/mod.ts";
import {
  CompactionFailedError,
  CorruptSessionError,
  InvalidInputError,
  RevisionConflictError,
  SessionBusyError,
  asSessionfoldError,
} from "../errors.ts";
import { decodeJsonl } from "../jsonl/decode.ts";
import type { Diagnostic } from "../jsonl/diagnostic.ts";
import { formatSessionRef, type SessionRef } from "../layout/ids.ts";
import { relativeToSession, type SessionPaths, type SessionPlace } from "../layout/paths.ts";
import type { SegmentRange } from "../layout/segments.ts";
import {
  MessageRecord,
  RESET_FIELD,
  SummaryRecord,
  cumulativeSummary,
  encodeJsonDocument,
  nowTimestamp,
  metaRevisionOf,
  type DraftRecord,
  type MessagePart,
  type ProviderIdentity,
  type SessionMeta,
  type Usage,
} from "../schema/mod.ts";
import { runCommitPlan, type CommitPlan, type CommitPlanResult, type PlannedWrite } from "../storage/commit-plan.ts";
import type { StoragePort } from "../storage/port.ts";
import { markBatch, withoutBatchMark } from "./batch.ts";
import { DraftWriter } from "./draft-writer.ts";
import { joinLines, lineOf } from "./lines.ts";
import { encodeWithUnknown, unknownLines, type UnknownLine } from "./unknown-lines.ts";
import { newId } from "./ids.ts";
import { PENDING_FIELD, loadSessionState } from "./load.ts";
import { newLockOwner, writerLockedError } from "./lock.ts";
import { generateSystem, type ResolvedSessionOptions } from "./options.ts";
import { listSegments } from "./load.ts";
import { withNewestSegment } from "./segment-hint.ts";
import type { WriterIdentity } from "./owner.ts";
import type { Summarizer } from "./provider.ts";
import type { PortableSegment, PortableSession } from "./portable.ts";
import { hasRepairs, isBlocked, lastSequence, type LiveDraft, type SessionState } from "./state.ts";
import { runLoop, type RunInput, type RunOptions } from "./run.ts";
import { RunHandle } from "./run-events.ts";
import { applyRepair } from "./repair.ts";
import { planRepair, type RepairReport } from "./repair-plan.ts";

/** What a session handle shares with its registry. */
export interface SessionContext {
  readonly storage: StoragePort;
  readonly identity: WriterIdentity;
  readonly clock: () => number;
}

/** A message to commit: sequence, id, time and part sequences are filled in when absent. */
export interface NewMessage {
  readonly role: "user" | "assistant";
  readonly parts: readonly (Omit<MessagePart, "sequence"> & { sequence?: number })[];
  readonly status?: "completed" | "stopped" | "failed";
  readonly usage?: Usage;
  readonly provider?: ProviderIdentity;
  readonly message_id?: string;
  readonly created_at?: string;
  readonly [extra: string]: unknown;
}

/** What a commit returns. */
export interface CommitResult {
  /** Sequences assigned, in order. */
  readonly sequences: number[];
  /** The session revision after the commit. */
  readonly revision: number;
}

/** Operations available to the code running inside one locked mutating operation. */
export interface SessionWriter {
  readonly session: Session;
  readonly state: Readonly<SessionState>;
  readonly options: ResolvedSessionOptions;
  readonly clock: () => number;
  /** Appends messages as one atomic batch plus one `meta.json` update (revision + 1). */
  commit(messages: readonly MessageRecord[]): Promise<CommitResult>;
  /** A coalescing writer of the streaming draft; `pending` are the run's uncommitted messages. */
  draftWriter(current: () => { draft: DraftRecord; pending: readonly MessageRecord[] }): DraftWriter;
  /** Removes the draft file. */
  removeDraft(): Promise<void>;
  /** Compacts Active with one summary call (its own commit). `undefined` when Active has < 2 messages. */
  compact(summarizer: Summarizer, signal: AbortSignal): Promise<CompactionOutcome | undefined>;
}

const busyByStorage = new WeakMap<StoragePort, Map<string, string>>();

/**
 * One session: its committed history, its draft and its model context. Get one from
 * {@linkcode Sessions.open} or {@linkcode Sessions.create}. Reading is free of I/O
 * except {@linkcode Session.messages} with `beforeSequence`; every mutating method
 * takes the session's `writer.lock`, checks the revision and commits atomically.
 *
 * @example
 * ```ts
 * import { Sessions } from "sessionfold";
 * const ref = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
 * declare const sessions: Sessions;
 *
 * const session = await sessions.open(ref);
 * await session.append({ role: "user", parts: [{ type: "text", text: "hi" }] });
 * session.revision; // 1
 * ```
 */
export class Session {
  readonly ref: SessionRef;
  readonly place: SessionPlace;
  readonly #ctx: SessionContext;
  readonly #paths: SessionPaths;
  readonly #options: ResolvedSessionOptions;
  #state: SessionState;
  #system: string | null;
  #needsReload = false;
  /** Set by a revision conflict: every write is refused until the host calls `reload()`. */
  #conflict: RevisionConflictError | undefined;

  /** @internal Use {@linkcode Sessions.open}. */
  constructor(ctx: SessionContext, ref: SessionRef, place: SessionPlace, paths: SessionPaths, state: SessionState, options: ResolvedSessionOptions) {
    this.#ctx = ctx;
    this.ref = ref;
    this.place = place;
    this.#paths = paths;
    this.#state = state;
    this.#options = options;
    this.#system = state.instruction ?? generateSystem(options.agent);
  }

  /** The session's monotonic revision. */
  get revision(): number {
    return this.#state.meta.revision;
  }

  /** A copy of `meta.json` as this handle knows it. */
  get meta(): SessionMeta {
    return structuredClone(this.#state.meta);
  }

  /** What recovery found on open (docs/FORMAT.md diagnostics). */
  get diagnostics(): readonly Diagnostic[] {
    return this.#state.diagnostics;
  }

  /** The system text: `instruction.md`, else the agent's instruction fixed at open. */
  get system(): string | null {
    return this.#system;
  }

  /** The newest segment's cumulative summary, if any compaction happened. */
  get summary(): SummaryRecord | undefined {
    return this.#state.footer;
  }

  /** The sequence range of the newest closed segment, `undefined` before the first compaction. */
  get newestSegment(): SegmentRange | undefined {
    return this.#state.newest;
  }

  /**
   * Every segment's range once {@linkcode Session.segments} listed them (kept current by this
   * handle's own compactions), else `undefined`: for synchronous code such as a UI render.
   */
  get listedSegments(): readonly SegmentRange[] | undefined {
    return this.#state.segments && [...this.#state.segments];
  }

  /**
   * The sequence ranges of every closed segment, oldest first. An open reads only the newest
   * segment (its cost must not grow with the history), so the first call lists `segments/`;
   * a gap between segments found then is reported in {@linkcode Session.diagnostics} and
   * blocks writes, as on open.
   *
   * @example
   * ```ts
   * import { Session } from "sessionfold";
   * declare const session: Session;
   *
   * for (const range of await session.segments()) console.log(range.start, range.end);
   * ```
   * @throws {StorageError} when `segments/` cannot be listed.
   */
  async segments(): Promise<readonly SegmentRange[]> {
    const state = this.#state;
    if (!state.segments) {
      const report = (file: string, line: number | null, code: Diagnostic["code"], fatal: boolean, message: string) => {
        if (!state.diagnostics.some((d) => d.file === file && d.code === code)) state.diagnostics.push({ file, line, code, fatal, message: `${file}: ${message}` });
      };
      const listed = await listSegments(this.#ctx.storage, this.#paths, report);
      // A compaction of this handle may have closed a segment while the listing ran.
      state.segments ??= listed;
    }
    return [...state.segments];
  }

  /** The Active window (committed messages after the latest compaction). */
  get active(): readonly MessageRecord[] {
    return this.#state.active.map(withoutBatchMark);
  }

  /** A live streaming draft left by an interrupted run, with the run's uncommitted messages. */
  get draft(): LiveDraft | undefined {
    return this.#state.draft;
  }

  /** The storage paths of this session. */
  get paths(): SessionPaths {
    return this.#paths;
  }

  /** The resolved configuration. */
  get options(): ResolvedSessionOptions {
    return this.#options;
  }

  /**
   * Exactly what the next model request reads: system + latest summary + Active.
   * Pure: reads no storage and changes nothing.
   *
   * @example
   * ```ts
   * import { Session } from "sessionfold";
   * declare const session: Session;
   *
   * const { input } = session.compose({ provider: "openai", api: "responses", model: "gpt-5" });
   * ```
   */
  compose(identity: ProviderIdentity): ComposedInput {
    return compose({ instruction: this.#system, footer: this.#state.footer, active: this.#state.active, identity });
  }

  /**
   * Active's messages, or with `beforeSequence` the whole newest segment whose end is
   * below it (`[]` when there is none). Loads one segment at a time.
   *
   * @example
   * ```ts
   * import { Session } from "sessionfold";
   * declare const session: Session;
   *
   * let page = await session.messages();
   * while (page.length > 0) page = await session.messages({ beforeSequence: page[0]!.sequence });
   * ```
   * @throws {CorruptSessionError} naming file and line when that segment has an invalid line.
   */
  async messages(options: { beforeSequence?: number } = {}): Promise<MessageRecord[]> {
    const before = options.beforeSequence;
    if (before === undefined) return this.active as MessageRecord[];
    if (!Number.isSafeInteger(before) || before < 1) {
      throw new InvalidInputError(`beforeSequence ${String(before)} is not a positive integer`, { beforeSequence: before });
    }
    const newest = this.#state.newest;
    const range = newest && newest.end < before ? newest : (await this.segments()).findLast((s) => s.end < before);
    if (!range) return [];
    return (await this.readSegment(range)).messages;
  }

  /**
   * Reads one whole segment: its messages and its footer.
   *
   * @throws {CorruptSessionError} naming file and line for any invalid line.
   */
  async readSegment(range: SegmentRange): Promise<{ messages: MessageRecord[]; footer: SummaryRecord | undefined }> {
    const path = this.#paths.segment(range);
    const file = relativeToSession(this.#paths, path);
    const bytes = (await this.#ctx.storage.read(path)) ?? new Uint8Array(0);
    const result = decodeJsonl<MessageRecord | SummaryRecord>(bytes, {
      file,
      schemas: { message: MessageRecord, summary: SummaryRecord },
      tornTailRecoverable: false,
    });
    const fatal = result.diagnostics.find((d) => d.fatal);
    if (fatal) {
      // Rule 2: corruption, once found, blocks every write to the session.
      if (!this.#state.diagnostics.some((d) => d.fatal && d.file === fatal.file && d.line === fatal.line)) this.#state.diagnostics.push(fatal);
      throw new CorruptSessionError(fatal.message, { file, line: fatal.line, diagnostic: fatal.code });
    }
    const messages: MessageRecord[] = [];
    let footer: SummaryRecord | undefined;
    for (const { record } of result.records) {
      if (record.record_type === "message") messages.push(withoutBatchMark(record));
      else footer = record;
    }
    return { messages, footer };
  }

  /**
   * The whole session in the format-neutral shape exporters take: every segment's messages
   * then Active, the system text, the latest summary and `meta.json`'s fields. Read-only
   * (no lock is written); a commit by another writer during the read is detected by the
   * revision and refused rather than exported half-old, half-new.
   *
   * @example
   * ```ts
   * import { Session, writeDeepCodeV1 } from "sessionfold";
   * declare const session: Session;
   *
   * const portable = await session.exportPortable();
   * const jsonl = writeDeepCodeV1(portable);
   * ```
   * @throws {CorruptSessionError} naming file and line when a segment has an invalid line.
   * @throws {RevisionConflictError} when another writer committed while it was read.
   */
  async exportPortable(onProgress?: (done: number, total: number) => void): Promise<PortableSession> {
    await this.reload();
    const fatal = this.#state.diagnostics.find((d) => d.fatal);
    if (fatal) throw new CorruptSessionError(`${formatSessionRef(this.ref)} cannot be exported: ${fatal.message}`, { file: fatal.file, line: fatal.line });
    const revision = this.#state.meta.revision;
    const messages: MessageRecord[] = [];
    const boundaries: PortableSegment[] = [];
    const segments = await this.segments();
    for (const [i, range] of segments.entries()) {
      const { messages: closed, footer } = await this.readSegment(range);
      for (const message of closed) messages.push(message);
      const text = cumulativeSummary(footer);
      if (footer && text !== null) boundaries.push({ through: messages.length, summary: text, createdAt: footer.created_at });
      onProgress?.(i + 1, segments.length + 1);
    }
    for (const message of this.active) messages.push(message);
    const found = metaRevisionOf(await this.#ctx.storage.read(this.#paths.meta));
    if (found !== this.#state.diskRevision) {
      throw new RevisionConflictError(`${formatSessionRef(this.ref)} changed while it was exported (revision ${revision} → ${found ?? "none"}); export again`, { expected: revision, found: found ?? null });
    }
    onProgress?.(segments.length + 1, segments.length + 1);
    const meta = this.#state.meta as SessionMeta & { metadata?: Record<string, string>; prompt_cache_key?: string; imported_from?: { cwd?: string; session_id?: string; updated_at?: string } };
    // docs/FORMAT.md: meta.json's provider, else the newest assistant message's.
    const provider = meta.provider ?? messages.findLast((m) => m.role === "assistant" && m.provider)?.provider;
    const newest = messages.at(-1)?.created_at;
    const sourceUpdatedAt = meta.imported_from?.updated_at;
    // An imported session unchanged since (no message newer than the source's own time) keeps the source's time.
    const updatedAt = typeof sourceUpdatedAt === "string" && (newest === undefined || Date.parse(newest) <= Date.parse(sourceUpdatedAt)) ? sourceUpdatedAt : meta.updated_at;
    const summary = cumulativeSummary(this.#state.footer);
    return {
      // An imported session goes back out under its source's id (a round trip keeps it).
      sourceId: typeof meta.imported_from?.session_id === "string" ? meta.imported_from.session_id : this.ref.sessionId,
      ...(meta.title !== undefined ? { title: meta.title } : {}),
      createdAt: meta.created_at,
      updatedAt,
      ...(meta.model_label !== undefined ? { modelLabel: meta.model_label } : {}),
      revision,
      system: this.#system,
      messages,
      ...(summary !== null ? { summary } : {}),
      ...(boundaries.length > 0 ? { segments: boundaries } : {}),
      ...(provider ? { provider } : {}),
      ...(meta.compaction ? { compaction: meta.compaction } : {}),
      ...(meta.metadata && typeof meta.metadata === "object" ? { metadata: meta.metadata } : {}),
      ...(typeof meta.prompt_cache_key === "string" ? { promptCacheKey: meta.prompt_cache_key } : {}),
      ...(typeof meta.imported_from?.cwd === "string" ? { cwd: meta.imported_from.cwd } : {}),
      format: "sessionfold",
    };
  }

  /**
   * Re-reads the session from storage (after another writer committed).
   *
   * @throws {UnsupportedSchemaError} when `meta.json` now has an unknown schema version.
   */
  async reload(): Promise<void> {
    this.#state = await loadSessionState(this.#ctx.storage, this.#paths, this.ref, this.#ctx.clock);
    this.#system = this.#state.instruction ?? this.#system ?? generateSystem(this.#options.agent);
    this.#needsReload = false;
    this.#conflict = undefined;
  }

  /**
   * Commits messages as one atomic batch: one append and one `meta.json` update. A live
   * draft is first finished as `stopped` in the same batch, so generation order holds.
   *
   * @example
   * ```ts
   * import { Session } from "sessionfold";
   * declare const session: Session;
   *
   * const { sequences, revision } = await session.append({ role: "user", parts: [{ type: "text", text: "hello" }] });
   * ```
   * @throws {InvalidInputError} when a message is not valid.
   * @throws {WriterLockedError} when another writer holds the session.
   * @throws {RevisionConflictError} when another writer committed since this handle read.
   * @throws {SessionBusyError} when another operation runs on this session in this process
   * @throws {CorruptSessionError} when a fatal diagnostic blocks writes.
   */
  async append(messages: NewMessage | readonly NewMessage[]): Promise<CommitResult> {
    // async: invalid input rejects the promise like every other failure, never throws synchronously.
    const list = (Array.isArray(messages) ? messages : [messages]) as readonly NewMessage[];
    if (list.length === 0) throw new InvalidInputError("append needs at least one message");
    const records = list.map((m, i) => toMessageRecord(m, this.#ctx.clock, `messages[${i}]`));
    return this.#exclusive("append", () => {
      // The common case is one plan run by the storage: one round trip through a worker.
      if (!this.#state.draft && !hasRepairs(this.#state)) return this.#commitPlanned("append", records);
      return this.#locked("append", async (writer) => {
        const draft = this.#state.draft;
        const recovered = draft ? stoppedDraftMessages(draft, false) : [];
        const result = await writer.commit([...recovered, ...records]);
        // A draft without output and pending messages commits nothing but goes all the same.
        if (draft) await writer.removeDraft();
        return { sequences: result.sequences.slice(recovered.length), revision: result.revision };
      });
    });
  }

  /**
   * Runs one agent turn: the user's input, then provider steps and tool calls until the
   * model answers without tool calls. Streams events; commits per seed 004's contract
   * (see {@linkcode runLoop}). Holds the session's lock for the whole turn.
   *
   * @example
   * ```ts
   * import { Session } from "sessionfold";
   * declare const session: Session;
   *
   * import type { Provider, Tool } from "sessionfold";
   * declare const provider: Provider;
   * declare const tools: Tool[];
   * const signal = new AbortController().signal;
   * declare function write(text: string): void;
   * const run = session.run("Summarize the diff", { provider, tools, signal });
   * for await (const e of run) if (e.type === "text-delta") write(e.text);
   * const { revision } = await run.result;
   * ```
   * @throws {CancelledError} (through `result`) after a cooperative cancellation, with the committed revision.
   * @throws {ProviderError} when the provider fails; nothing of the run is committed.
   * @throws {ContextOverflowError} when the input still overflows after the bounded folds.
   * @throws {WriterLockedError} / {RevisionConflictError} / {SessionBusyError} as for `append`.
   */
  run(input: RunInput, options: RunOptions): RunHandle {
    return new RunHandle((emit) => this.mutate("run", (writer) => runLoop(writer, input, options, emit)), options.onEvent);
  }

  /**
   * Finishes a live draft left by an interrupted run as a `stopped` message, committing
   * the run's pending messages with it. Resolves `undefined` when there is no draft.
   *
   * @throws {WriterLockedError} / {RevisionConflictError} / {SessionBusyError} as for `append`.
   */
  finishDraft(): Promise<CommitResult | undefined> {
    return this.mutate("finish-draft", async (writer) => {
      const draft = this.#state.draft;
      if (!draft) return undefined;
      const messages = stoppedDraftMessages(draft, false);
      // A draft without output and without pending messages has nothing to commit: it is only removed.
      const result = messages.length > 0 ? await writer.commit(messages) : { sequences: [], revision: this.revision };
      await writer.removeDraft();
      return result;
    });
  }

  /**
   * Compacts now (seed 000): the oldest half of Active becomes a segment with one
   * cumulative summary from exactly one summarizer call. Refused while a draft exists.
   * With fewer than 2 messages in Active nothing changes and `segment` is `null`.
   *
   * @example
   * ```ts
   * import { Session } from "sessionfold";
   * declare const session: Session;
   *
   * const outcome = await session.compact();
   * outcome.revision; outcome.removedMessages;
   * ```
   * @throws {InvalidInputError} when no summarizer is configured or given.
   * @throws {SessionBusyError} when a streaming draft exists (finish it first).
   * @throws {CompactionFailedError} when the summarizer fails, is cancelled or returns an empty summary; nothing changed.
   */
  async compact(options: { signal?: AbortSignal; summarizer?: Summarizer } = {}): Promise<CompactionOutcome | NoCompaction> {
    const summarizer = options.summarizer ?? this.#options.summarizer;
    if (!summarizer) throw new InvalidInputError("compact() needs a summarizer (session options or the call's)");
    return this.mutate("compact", async (writer) => {
      if (this.#state.draft) {
        throw new SessionBusyError(`${formatSessionRef(this.ref)}: a streaming draft exists; finish it before compacting`, { draft: this.#state.draft.record.message_id });
      }
      const outcome = await writer.compact(summarizer, options.signal ?? new AbortController().signal);
      return outcome ?? { revision: this.revision, removedMessages: 0, keptMessages: this.#state.active.length, segment: null };
    });
  }

  /**
   * Resets the conversation (seed 004): the model context starts over from the system
   * text alone. Nothing is deleted: Active is closed as a segment whose footer marks the
   * reset, so history stays readable, forkable and exportable. Revision + 1; the
   * compaction continuation state is cleared (accounting totals stay).
   *
   * @example
   * ```ts
   * import { Session } from "sessionfold";
   * declare const session: Session;
   *
   * await session.reset();
   * import type { ProviderIdentity } from "sessionfold";
   * const identity: ProviderIdentity = { provider: "openai", api: "responses", model: "gpt-5" };
   * session.compose(identity).input.messages.length; // 0
   * ```
   * @throws {SessionBusyError} when a streaming draft exists.
   * @throws {WriterLockedError} / {RevisionConflictError} as for `append`.
   */
  reset(): Promise<{ revision: number }> {
    return this.mutate("reset", async () => {
      const state = this.#state;
      if (state.draft) throw new SessionBusyError(`${formatSessionRef(this.ref)}: a streaming draft exists; finish it before resetting`);
      const first = state.active[0];
      if (!first) return { revision: state.meta.revision };
      const range = { start: first.sequence, end: lastSequence(state) };
      const footer: SummaryRecord = {
        record_type: "summary",
        session_id: this.ref.sessionId,
        summary_id: newId("sum"),
        through_sequence: range.end,
        text: `The conversation was reset after sequence ${range.end}; nothing before it belongs to the model context.`,
        created_at: nowTimestamp(this.#ctx.clock),
        [RESET_FIELD]: true,
      };
      const unknown = await this.#unknownActiveLines();
      const segmentBytes = encodeWithUnknown(state.active.map(withoutBatchMark), unknown, true, [footer]);
      const compaction = state.meta.compaction ? { ...state.meta.compaction, [LAST_COMPACTED_FIELD]: range.end } : undefined;
      await this.#closeSegment(range, footer, segmentBytes, [], new Uint8Array(0), {
        history_bytes: state.meta.history_bytes - state.activeBytes + segmentBytes.length,
        revision: state.meta.revision + 1,
        ...(compaction ? { compaction } : {}),
      });
      return { revision: state.meta.revision };
    });
  }

  /**
   * Repairs what recovery found (docs/FORMAT.md "Repair"). Without `apply` it only plans and
   * reports, reading every file and writing nothing. With `apply: true`, under the session's
   * `writer.lock`, every line recovery reports or would cut (an unreadable line anywhere, a
   * torn tail, a line over the limit, messages already in the newest segment, an exact
   * duplicate, an interrupted final commit) moves into a quarantine file beside the session,
   * `quarantine/<file>.<time>.jsonl`, and an unreadable `meta.json`, draft or
   * `instruction.md` moves there whole; nothing is deleted. Every valid record stays with its
   * exact bytes and sequence, and `meta.json` is rebuilt (revision + 1). The handle is
   * reloaded afterwards, so writes work again.
   *
   * @example
   * ```ts
   * import { Session } from "sessionfold";
   * declare const session: Session;
   *
   * const plan = await session.repair();
   * if (plan.refused.length === 0 && !plan.clean) {
   *   const done = await session.repair({ apply: true });
   *   for (const move of done.moves) console.log(`${move.from} → ${move.to}`, move.lines?.map((l) => l.line));
   * }
   * ```
   * @throws {CorruptSessionError} with `apply`, when the plan is refused (a gap in the sequences
   * that no line closes, a segment without a readable footer, a newer `meta.json`): nothing changed.
   * @throws {WriterLockedError} with `apply`, when another writer holds the session.
   * @throws {SessionBusyError} / {InvalidInputError} as for `append` (busy, archived).
   */
  async repair(options: { readonly apply?: boolean } = {}): Promise<RepairReport> {
    const { storage, clock } = this.#ctx;
    if (options.apply !== true) return (await planRepair(storage, this.#paths, this.ref, clock)).report;
    return this.#exclusive(
      "repair",
      async () => {
        // No revision check: meta.json may be unreadable. The plan is made from the files as they are once the lock is held.
        const held = await this.#runLockedPlan("repair", [], true, false);
        try {
          const plan = await planRepair(storage, this.#paths, this.ref, clock);
          const { refused } = plan.report;
          if (refused.length > 0) {
            throw new CorruptSessionError(`${formatSessionRef(this.ref)} cannot be repaired: ${refused.map((r) => r.reason).join("; ")}`, {
              file: refused[0]!.file,
              line: refused[0]!.line,
              refused: refused.map((r) => ({ ...r })),
            });
          }
          return plan.report.clean ? plan.report : await applyRepair(storage, plan, this.#paths.dir);
        } finally {
          await this.#runPlan({ writes: [], release: held }).catch(() => undefined);
          await this.reload().catch(() => (this.#needsReload = true));
        }
      },
      true,
    );
  }

  /**
   * Writes the session's system text to `instruction.md` (creates or overwrites it).
   *
   * @throws {InvalidInputError} when there is no system text to write.
   */
  snapshot(): Promise<void> {
    return this.mutate("snapshot", async () => {
      if (this.#system === null) throw new InvalidInputError("the session has no system text to snapshot (no instruction.md and no agent instruction)");
      await this.#ctx.storage.replace(this.#paths.instruction, new TextEncoder().encode(this.#system));
      this.#state.instruction = this.#system;
    });
  }

  /**
   * Regenerates the system from the agent's current instruction and plugins, and
   * overwrites `instruction.md` only when it already exists.
   */
  syncshot(): Promise<void> {
    return this.mutate("syncshot", async () => {
      this.#system = generateSystem(this.#options.agent);
      if (this.#state.instruction !== undefined) {
        if (this.#system === null) await this.#ctx.storage.remove(this.#paths.instruction);
        else await this.#ctx.storage.replace(this.#paths.instruction, new TextEncoder().encode(this.#system));
        this.#state.instruction = this.#system ?? undefined;
      }
    });
  }

  /**
   * Runs `fn` as one mutating operation: one at a time per session in this process
   * (`SessionBusyError`), under the session's `writer.lock` (`WriterLockedError`),
   * after the optimistic revision check (`RevisionConflictError`) and the repairs that
   * recovery postponed. Used by `run()` and by hosts that build their own operations.
   */
  mutate<T>(operation: string, fn: (writer: SessionWriter) => Promise<T>): Promise<T> {
    return this.#exclusive(operation, () => this.#locked(operation, fn));
  }

  /**
   * The body of {@linkcode Session.mutate}: lock and revision check (one plan, so one round
   * trip through a worker), repairs, `fn`, release (one more).
   */
  async #locked<T>(operation: string, fn: (writer: SessionWriter) => Promise<T>): Promise<T> {
    const held = await this.#runLockedPlan(operation, [], true);
    try {
      await this.#applyRepairs();
      return await fn(this.#writer());
    } catch (error) {
      throw await this.#failed(operation, error);
    } finally {
      await this.#runPlan({ writes: [], release: held }).catch(() => undefined);
    }
  }

  /**
   * Appends `records` as one {@linkcode CommitPlan}: lock, revision check, append and
   * `meta.json` in one storage call when the backend runs plans itself. Only for a session
   * without repairs to do or a draft to finish (those take {@linkcode Session.mutate}).
   */
  async #commitPlanned(operation: string, records: readonly MessageRecord[]): Promise<CommitResult> {
    const { sequenced, bytes, meta } = this.#prepareCommit(records);
    await this.#runLockedPlan(operation, this.#commitWrites(bytes, meta), false);
    this.#committed(sequenced, bytes.length, meta);
    return { sequences: sequenced.map((r) => r.sequence), revision: meta.revision };
  }

  /**
   * Runs `writes` as a plan that first takes a new `writer.lock` for `operation` and checks
   * that `meta.json` is still what this handle read; with `hold` the lock stays taken.
   * Returns what gives the lock back (a later plan's `release`).
   *
   * @throws {WriterLockedError} when another writer holds the lock; nothing was written.
   * @throws {RevisionConflictError} when another writer committed; nothing was written.
   */
  async #runLockedPlan(operation: string, writes: PlannedWrite[], hold: boolean, checkRevision = true): Promise<NonNullable<CommitPlan["release"]>> {
    const owner = newLockOwner(this.#ctx.identity, operation, this.#ctx.clock);
    const lock = { path: this.#paths.lock, bytes: encodeJsonDocument(owner), lockId: owner.lock_id };
    const expect = checkRevision ? { expect: { path: this.#paths.meta, revision: this.#state.diskRevision ?? null } } : {};
    let result: CommitPlanResult;
    try {
      result = await this.#runPlan({ lock, hold, ...expect, writes });
    } catch (error) {
      throw await this.#failed(operation, error);
    }
    if (result.outcome === "locked") throw await writerLockedError(this.#ctx.storage, lock.path);
    if (result.outcome === "conflict") throw this.#revisionConflict(result.revision ?? undefined);
    return { path: lock.path, lockId: lock.lockId };
  }

  /** Runs a plan in one storage call when the backend offers it (one round trip through a worker). */
  #runPlan(plan: CommitPlan): Promise<CommitPlanResult> {
    const storage = this.#ctx.storage;
    return storage.runCommitPlan ? storage.runCommitPlan(plan) : runCommitPlan(storage, plan);
  }

  /** Sequences, line bytes and the next `meta.json` of a commit of `records` (nothing is written). */
  #prepareCommit(records: readonly MessageRecord[]): { sequenced: MessageRecord[]; bytes: Uint8Array; meta: SessionMeta } {
    if (records.length === 0) throw new InvalidInputError("a commit needs at least one message");
    const state = this.#state;
    let sequence = lastSequence(state);
    const sequenced = records.map((m) => ({ ...m, sequence: ++sequence }));
    const bytes = joinLines(markBatch(sequenced).map(lineOf));
    // docs/FORMAT.md: meta.json's provider is the identity of the newest assistant message.
    const produced = sequenced.findLast((m) => m.role === "assistant" && m.provider)?.provider;
    const meta: SessionMeta = {
      ...withNewestSegment(state.meta, state.newest),
      ...(produced ? { provider: { provider: produced.provider, api: produced.api, model: produced.model } } : {}),
      message_count: sequence,
      history_bytes: state.meta.history_bytes + bytes.length,
      revision: state.meta.revision + 1,
      updated_at: nowTimestamp(this.#ctx.clock),
    };
    return { sequenced, bytes, meta };
  }

  /**
   * A commit's writes: the lines, then `meta.json`. The lines are durable when the append
   * resolves; `meta.json` need not be (recovery rule 5 rebuilds one left behind).
   */
  #commitWrites(bytes: Uint8Array, meta: SessionMeta): PlannedWrite[] {
    return [
      { op: "append", path: this.#paths.active, bytes },
      { op: "replace", path: this.#paths.meta, bytes: encodeJsonDocument(meta), durable: false },
    ];
  }

  /** Takes a commit written to disk into memory. */
  #committed(sequenced: readonly MessageRecord[], byteLength: number, meta: SessionMeta): void {
    this.#state.active.push(...sequenced);
    this.#state.activeBytes += byteLength;
    this.#state.meta = meta;
    this.#state.diskRevision = meta.revision;
  }

  /** After a failed operation: reload what is on disk (unless the handle is stale) and type the error. */
  async #failed(operation: string, error: unknown): Promise<Error> {
    if (!(error instanceof RevisionConflictError)) await this.reload().catch(() => (this.#needsReload = true));
    return asSessionfoldError(error, `${operation} on ${formatSessionRef(this.ref)} failed`);
  }

  /**
   * One mutating operation at a time per session in this process, on a live, writable handle.
   * `repairing`: the handle may be blocked by corruption or stale (repair reads the files afresh under the lock).
   */
  async #exclusive<T>(operation: string, body: () => Promise<T>, repairing = false): Promise<T> {
    const busy = busyMap(this.#ctx.storage);
    const holder = busy.get(this.#paths.dir);
    if (holder) {
      throw new SessionBusyError(`${formatSessionRef(this.ref)}: "${holder}" is still running; one mutating operation at a time`, { operation: holder });
    }
    if (this.place !== "live") {
      throw new InvalidInputError(`${formatSessionRef(this.ref)} is archived; archived sessions are read-only`);
    }
    busy.set(this.#paths.dir, operation);
    try {
      if (!repairing) {
        if (this.#conflict) throw this.#conflict;
        if (this.#needsReload) await this.reload();
        this.#assertWritable();
      }
      return await body();
    } finally {
      busy.delete(this.#paths.dir);
    }
  }

  #assertWritable(): void {
    if (!isBlocked(this.#state)) return;
    const first = this.#state.diagnostics.find((d) => d.fatal)!;
    throw new CorruptSessionError(`${formatSessionRef(this.ref)} is read-only until repaired: ${first.message}`, {
      file: first.file,
      line: first.line,
      diagnostic: first.code,
    });
  }

  /** Marks the handle stale: every write is refused until `reload()`. */
  #revisionConflict(found: number | undefined): RevisionConflictError {
    const expected = this.#state.diskRevision;
    return (this.#conflict = new RevisionConflictError(
      `${formatSessionRef(this.ref)}: meta.json is at revision ${found ?? "none"} but this handle read ${expected ?? "none"}; another writer committed (reopen or reload)`,
      { expected: expected ?? null, found: found ?? null },
    ));
  }

  async #applyRepairs(): Promise<void> {
    const { storage } = this.#ctx;
    const state = this.#state;
    const repairs = state.repairs;
    // meta.json goes first, with the figures of the repaired files. Every repair that changes
    // history_bytes is one that made recovery rebuild meta.json (load.ts: an overlap, a missing
    // final newline); a crash before the files are repaired leaves that damage in place, so the
    // next open rebuilds meta.json again. Repairing the files first would let a crash leave a
    // stale meta.json that no longer looks stale.
    const rewritten = repairs.rewriteActive ? encodeWithUnknown(state.active, await this.#unknownActiveLines(), true) : undefined;
    const activeBytes = rewritten ? rewritten.length : repairs.addNewline ? state.activeBytes + 1 : state.activeBytes;
    if (activeBytes !== state.activeBytes) {
      state.meta = { ...state.meta, history_bytes: state.meta.history_bytes - state.activeBytes + activeBytes };
      repairs.writeMeta = true;
    }
    if (repairs.writeMeta) await this.#writeMeta({});
    if (rewritten) {
      await storage.replace(this.#paths.active, rewritten);
    } else if (repairs.truncateActiveTo !== undefined) {
      await storage.truncate(this.#paths.active, repairs.truncateActiveTo);
    } else if (repairs.addNewline) {
      await storage.append(this.#paths.active, new TextEncoder().encode("\n"));
    }
    state.activeBytes = activeBytes;
    if (repairs.removeStaleDraft) await storage.remove(this.#paths.draft);
    state.repairs = {};
  }

  /** Lines of unknown record types in `active.jsonl`, which a rewrite must carry along. */
  async #unknownActiveLines(): Promise<UnknownLine[]> {
    const file = relativeToSession(this.#paths, this.#paths.active);
    if (!this.#state.diagnostics.some((d) => d.code === "unknown_record" && d.file === file)) return [];
    return unknownLines((await this.#ctx.storage.read(this.#paths.active)) ?? new Uint8Array(0));
  }

  /**
   * Closes the oldest messages of Active into the segment `range` (compaction, reset). The
   * order is what recovery relies on: `meta.json` first, naming the new segment; then the
   * segment; then Active. A crash before the segment lands leaves a hint that the files do
   * not confirm, so the next open lists `segments/` and rebuilds `meta.json`; a crash before
   * Active is replaced leaves the overlap of rule 3. Either way the hint never hides a
   * segment that exists (load.ts).
   */
  async #closeSegment(range: SegmentRange, footer: SummaryRecord, segmentBytes: Uint8Array, kept: MessageRecord[], activeBytes: Uint8Array, patch: Partial<SessionMeta>): Promise<void> {
    const { storage } = this.#ctx;
    const state = this.#state;
    // What meta.json holds now: the mutation applied recovery's repairs before this runs.
    const before = encodeJsonDocument(state.meta);
    const meta = this.#nextMeta(patch, range);
    const writes: PlannedWrite[] = [
      { op: "replace", path: this.#paths.meta, bytes: encodeJsonDocument(meta) },
      { op: "replace", path: this.#paths.segment(range), bytes: segmentBytes },
      { op: "replace", path: this.#paths.active, bytes: activeBytes },
    ];
    try {
      await this.#runPlan({ writes });
    } catch (error) {
      // Best effort: put back the meta.json that matches the files (the next open would rebuild it anyway).
      if (!(await storage.readTail(this.#paths.segment(range), 0).catch(() => undefined))) await storage.replace(this.#paths.meta, before).catch(() => undefined);
      throw error;
    }
    state.meta = meta;
    state.diskRevision = meta.revision;
    state.segments?.push(range);
    state.newest = range;
    state.footer = footer;
    state.active = kept;
    state.activeBytes = activeBytes.length;
  }

  /** `meta.json` with `patch`, a new `updated_at` and the newest-segment hint (`newest`, else the current one). */
  #nextMeta(patch: Partial<SessionMeta>, newest = this.#state.newest): SessionMeta {
    return withNewestSegment({ ...this.#state.meta, ...patch, updated_at: nowTimestamp(this.#ctx.clock) }, newest);
  }

  /** Writes `meta.json` with `patch` (see {@linkcode Session.#nextMeta}). */
  async #writeMeta(patch: Partial<SessionMeta>): Promise<void> {
    const meta = this.#nextMeta(patch);
    await this.#ctx.storage.replace(this.#paths.meta, encodeJsonDocument(meta));
    this.#state.meta = meta;
    this.#state.diskRevision = meta.revision;
  }

  #writer(): SessionWriter {
    const { storage, clock } = this.#ctx;
    const state = this.#state;
    const paths = this.#paths;
    const session = this;
    return {
      session,
      state,
      options: this.#options,
      clock,
      commit: async (messages) => {
        const { sequenced, bytes, meta } = this.#prepareCommit(messages);
        await this.#runPlan({ writes: this.#commitWrites(bytes, meta) });
        this.#committed(sequenced, bytes.length, meta);
        return { sequences: sequenced.map((r) => r.sequence), revision: meta.revision };
      },
      draftWriter: (current) =>
        new DraftWriter(
          (bytes) => storage.replace(paths.draft, bytes),
          () => {
            const { draft, pending } = current();
            return new TextEncoder().encode(`${JSON.stringify({ ...draft, [PENDING_FIELD]: pending })}\n`);
          },
          this.#options.draftFlush,
          clock,
        ),
      removeDraft: async () => {
        await storage.remove(paths.draft);
        state.draft = undefined;
      },
      compact: (summarizer, signal) => this.#compact(summarizer, signal),
    };
  }

  async #compact(summarizer: Summarizer, signal: AbortSignal): Promise<CompactionOutcome | undefined> {
    const state = this.#state;
    const plan = planCompaction(state.active);
    if (!plan) return undefined;
    const previous = cumulativeSummary(state.footer);
    let text: string;
    let cost: number | undefined;
    try {
      signal.throwIfAborted();
      const result = await summarizer.summarize({ previousSummary: previous, messages: plan.selected.map(withoutBatchMark), signal });
      signal.throwIfAborted();
      text = typeof result?.text === "string" ? result.text : "";
      cost = result?.usage?.cost_usd_micros;
    } catch (error) {
      const reason = signal.aborted ? "it was cancelled" : `the summarizer failed: ${error instanceof Error ? error.message : String(error)}`;
      throw new CompactionFailedError(`compaction of ${formatSessionRef(this.ref)} failed: ${reason}; nothing changed`, { cancelled: signal.aborted }, { cause: error });
    }
    if (text.trim() === "") {
      throw new CompactionFailedError(`compaction of ${formatSessionRef(this.ref)} failed: the summarizer returned an empty summary; nothing changed`, { empty: true });
    }
    // The estimate adds up message by message: Active = the selected half + the kept half.
    const removedTokens = estimateTokens(plan.selected);
    const keptTokens = estimateTokens(plan.kept);
    const beforeTokens = estimateTextTokens(previous) + removedTokens + keptTokens;
    const footer: SummaryRecord = {
      record_type: "summary",
      session_id: this.ref.sessionId,
      summary_id: newId("sum"),
      through_sequence: plan.range.end,
      text,
      created_at: nowTimestamp(this.#ctx.clock),
    };
    const selected = plan.selected.map(withoutBatchMark);
    const kept = plan.kept.map(withoutBatchMark);
    const unknown = await this.#unknownActiveLines();
    const segmentBytes = encodeWithUnknown(selected, unknown, false, [footer]);
    const activeBytes = encodeWithUnknown(kept, unknown, true);
    const afterTokens = estimateTextTokens(text) + keptTokens;
    const accounting = accumulateCompaction(state.meta.compaction, {
      removedMessages: selected.length,
      removedTokensEstimate: removedTokens,
      ...(cost !== undefined ? { costUsdMicros: cost } : {}),
      beforeTokens,
      afterTokens,
    });
    await this.#closeSegment(plan.range, footer, segmentBytes, kept, activeBytes, {
      history_bytes: state.meta.history_bytes - state.activeBytes + activeBytes.length + segmentBytes.length,
      revision: state.meta.revision + 1,
      compaction: { ...accounting, [LAST_COMPACTED_FIELD]: lastSequence(state) },
    });
    return {
      revision: state.meta.revision,
      removedMessages: selected.length,
      keptMessages: kept.length,
      segment: { start: plan.range.start, end: plan.range.end },
      beforeTokens,
      afterTokens,
      ...(cost !== undefined ? { costUsdMicros: cost } : {}),
      summaryChars: text.length,
    };
  }
}

/** What `compact()` returns when Active had fewer than 2 messages: nothing changed. */
export interface NoCompaction {
  readonly revision: number;
  readonly removedMessages: 0;
  readonly keptMessages: number;
  readonly segment: null;
}

/**
 * Extension field of `meta.json`'s `compaction`: the highest sequence when the last
 * compaction committed. Usage reported by messages up to it predates the compaction
 * and neither triggers nor validates one (docs/decisions.md).
 */
export const LAST_COMPACTED_FIELD = "last_compacted_sequence";

function busyMap(storage: StoragePort): Map<string, string> {
  let map = busyByStorage.get(storage);
  if (!map) busyByStorage.set(storage, (map = new Map()));
  return map;
}

/** The run messages a live draft would commit with, the draft itself finished as `stopped`. */
export function stoppedDraftMessages(draft: LiveDraft, clearReasoning: boolean): MessageRecord[] {
  const { record } = draft;
  const parts = clearReasoning ? record.parts.filter((p) => p.type !== "reasoning") : record.parts;
  const stopped: MessageRecord = { ...record, status: "stopped", parts };
  const hasOutput = stopped.parts.length > 0 || stopped.usage !== undefined;
  return [...draft.pending, ...(hasOutput ? [stopped] : [])];
}

/**
 * Validates a {@linkcode NewMessage} and fills in what is missing.
 *
 * @throws {InvalidInputError} naming the field that is not valid.
 */
export function toMessageRecord(message: NewMessage, clock: () => number, where = "message"): MessageRecord {
  const parts = (message.parts ?? []).map((part, i) => ({ ...part, sequence: part.sequence ?? i + 1 }));
  const candidate = {
    ...message,
    record_type: "message",
    sequence: 1,
    message_id: message.message_id ?? newId("m"),
    created_at: message.created_at ?? nowTimestamp(clock),
    ...(message.role === "assistant" && message.status === undefined ? { status: "completed" } : {}),
    parts,
  };
  const parsed = MessageRecord.safeParse(candidate);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InvalidInputError(`${where}.${issue.path.join(".")}: ${issue.message}`, { path: issue.path.map(String) });
  }
  return parsed.data;
}
