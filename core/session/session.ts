/**
 * The session handle: a facade over its named parts. The transaction (`transaction.ts`:
 * exclusive operation, lock, revision check, commit plan, conflict) carries every write;
 * recovery's repairs (`recovery.ts`) run first under the lock; the segment writer
 * (`segment-writer.ts`) closes segments for compaction and reset; the read view
 * (`read-view.ts`) lists and reads segments; the export mapping (`export-portable.ts`)
 * builds the portable session. This file only wires them to the public methods.
 *
 * @module
 */
import type { CompactionOutcome } from "../compaction/mod.ts";
import { compose, type ComposedInput } from "../composer/mod.ts";
import { CorruptSessionError, InvalidInputError, SessionBusyError } from "../errors.ts";
import type { Diagnostic } from "../jsonl/diagnostic.ts";
import { formatSessionRef, type SessionRef } from "../layout/ids.ts";
import type { SessionPaths, SessionPlace } from "../layout/paths.ts";
import type { SegmentRange } from "../layout/segments.ts";
import type { PortableSession, Summarizer } from "../model/mod.ts";
import type { MessageRecord, ProviderIdentity, SessionMeta, SummaryRecord } from "../schema/mod.ts";
import { publicRecord } from "./batch.ts";
import { DraftWriter } from "./draft-writer.ts";
import { exportSession, type ExportPortableOptions } from "./export-portable.ts";
import { PENDING_FIELD } from "./load.ts";
import { toMessageRecord, type NewMessage } from "./message-input.ts";
import { generateSystem, type ResolvedSessionOptions } from "./options.ts";
import { messagesBefore, readSegment, segmentRanges, type ReadSource } from "./read-view.ts";
import { applyRepair } from "./repair.ts";
import { planRepair, type RepairReport } from "./repair-plan.ts";
import { runLoop, type RunInput, type RunOptions } from "./run.ts";
import { RunHandle } from "./run-events.ts";
import { compactActive, resetActive } from "./segment-writer.ts";
import { hasRepairs, stoppedDraftMessages, type LiveDraft, type SessionState } from "./state.ts";
import { SessionTransaction, type SessionContext } from "./transaction.ts";
import type { CommitResult, SessionWriter } from "./writer.ts";

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
  readonly #tx: SessionTransaction;
  #system: string | null;

  /** @internal Use {@linkcode Sessions.open}. */
  constructor(ctx: SessionContext, ref: SessionRef, place: SessionPlace, paths: SessionPaths, state: SessionState, options: ResolvedSessionOptions) {
    this.ref = ref;
    this.place = place;
    this.#system = state.instruction ?? generateSystem(options.agent);
    this.#tx = new SessionTransaction(ctx, ref, place, paths, state, options, (reloaded) => {
      this.#system = reloaded.instruction ?? this.#system ?? generateSystem(options.agent);
    });
  }

  /** The session's monotonic revision. */
  get revision(): number {
    return this.#tx.state.meta.revision;
  }

  /** A copy of `meta.json` as this handle knows it. */
  get meta(): SessionMeta {
    return structuredClone(this.#tx.state.meta);
  }

  /** What recovery found on open (docs/FORMAT.md diagnostics). */
  get diagnostics(): readonly Diagnostic[] {
    return this.#tx.state.diagnostics;
  }

  /** The system text: `instruction.md`, else the agent's instruction fixed at open. */
  get system(): string | null {
    return this.#system;
  }

  /** The newest segment's cumulative summary, if any compaction happened. */
  get summary(): SummaryRecord | undefined {
    return this.#tx.state.footer;
  }

  /** The sequence range of the newest closed segment, `undefined` before the first compaction. */
  get newestSegment(): SegmentRange | undefined {
    return this.#tx.state.newest;
  }

  /**
   * Every segment's range once {@linkcode Session.segments} listed them (kept current by this
   * handle's own compactions), else `undefined`: for synchronous code such as a UI render.
   */
  get listedSegments(): readonly SegmentRange[] | undefined {
    const segments = this.#tx.state.segments;
    return segments && [...segments];
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
  segments(): Promise<readonly SegmentRange[]> {
    return segmentRanges(this.#read());
  }

  /** The Active window (committed messages after the latest compaction). */
  get active(): readonly MessageRecord[] {
    return this.#tx.state.active.map(publicRecord);
  }

  /** A live streaming draft left by an interrupted run, with the run's uncommitted messages. */
  get draft(): LiveDraft | undefined {
    return this.#tx.state.draft;
  }

  /** The storage paths of this session. */
  get paths(): SessionPaths {
    return this.#tx.paths;
  }

  /** The resolved configuration. */
  get options(): ResolvedSessionOptions {
    return this.#tx.options;
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
    const state = this.#tx.state;
    return compose({ instruction: this.#system, footer: state.footer, active: state.active, identity });
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
  messages(options: { beforeSequence?: number } = {}): Promise<MessageRecord[]> {
    return messagesBefore(this.#read(), options.beforeSequence);
  }

  /**
   * Reads one whole segment: its messages and its footer.
   *
   * @throws {CorruptSessionError} naming file and line for any invalid line.
   */
  readSegment(range: SegmentRange): Promise<{ messages: MessageRecord[]; footer: SummaryRecord | undefined }> {
    return readSegment(this.#read(), range);
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
   * const portable = await session.exportPortable({ onProgress: (done, total) => console.log(`${done}/${total}`) });
   * const jsonl = writeDeepCodeV1(portable);
   * ```
   * @throws {CorruptSessionError} naming file and line when a segment has an invalid line.
   * @throws {RevisionConflictError} when another writer committed while it was read.
   */
  exportPortable(options: ExportPortableOptions = {}): Promise<PortableSession> {
    return exportSession(this.#tx, () => this.#system, options);
  }

  /**
   * Re-reads the session from storage (after another writer committed).
   *
   * @throws {UnsupportedSchemaError} when `meta.json` now has an unknown schema version.
   */
  reload(): Promise<void> {
    return this.#tx.reload();
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
    const tx = this.#tx;
    const records = list.map((m, i) => toMessageRecord(m, tx.ctx.clock, `messages[${i}]`));
    return tx.exclusive("append", () => {
      // The common case is one plan run by the storage: one round trip through a worker.
      if (!tx.state.draft && !hasRepairs(tx.state)) return tx.commitAlone("append", records);
      return tx.locked("append", async () => {
        const draft = tx.state.draft;
        const recovered = draft ? stoppedDraftMessages(draft, false) : [];
        const result = await tx.commit([...recovered, ...records]);
        // A draft without output and pending messages commits nothing but goes all the same.
        if (draft) await this.#removeDraft();
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
      const draft = this.#tx.state.draft;
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
    const summarizer = options.summarizer ?? this.#tx.options.summarizer;
    if (!summarizer) throw new InvalidInputError("compact() needs a summarizer (session options or the call's)");
    return this.mutate("compact", async (writer) => {
      const state = this.#tx.state;
      if (state.draft) {
        throw new SessionBusyError(`${formatSessionRef(this.ref)}: a streaming draft exists; finish it before compacting`, { draft: state.draft.record.message_id });
      }
      const outcome = await writer.compact(summarizer, options.signal ?? new AbortController().signal);
      return outcome ?? { revision: this.revision, removedMessages: 0, keptMessages: state.active.length, segment: null };
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
    return this.mutate("reset", () => resetActive(this.#tx));
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
    const tx = this.#tx;
    const { storage, clock } = tx.ctx;
    if (options.apply !== true) return (await planRepair(storage, tx.paths, this.ref, clock)).report;
    return tx.exclusive(
      "repair",
      async () => {
        // No revision check: meta.json may be unreadable. The plan is made from the files as they are once the lock is held.
        const lease = await tx.lock("repair", [], true, false);
        try {
          const plan = await planRepair(storage, tx.paths, this.ref, clock);
          const { refused } = plan.report;
          if (refused.length > 0) {
            throw new CorruptSessionError(`${formatSessionRef(this.ref)} cannot be repaired: ${refused.map((r) => r.reason).join("; ")}`, {
              file: refused[0]!.file,
              line: refused[0]!.line,
              refused: refused.map((r) => ({ ...r })),
            });
          }
          return plan.report.clean ? plan.report : await applyRepair(storage, plan, tx.paths.dir);
        } finally {
          await tx.unlock(lease).catch(() => undefined);
          await tx.reload().then(() => tx.notifyCommit(), () => tx.reloadLater());
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
      await this.#tx.ctx.storage.replace(this.#tx.paths.instruction, new TextEncoder().encode(this.#system));
      this.#tx.state.instruction = this.#system;
    });
  }

  /**
   * Regenerates the system from the agent's current instruction and plugins, and
   * overwrites `instruction.md` only when it already exists.
   */
  syncshot(): Promise<void> {
    return this.mutate("syncshot", async () => {
      const { storage } = this.#tx.ctx;
      const { paths, state } = this.#tx;
      this.#system = generateSystem(this.#tx.options.agent);
      if (state.instruction !== undefined) {
        if (this.#system === null) await storage.remove(paths.instruction);
        else await storage.replace(paths.instruction, new TextEncoder().encode(this.#system));
        state.instruction = this.#system ?? undefined;
      }
    });
  }

  /**
   * Whether this handle holds the session (a lease, from `open(ref, { hold: true })` or
   * {@linkcode Session.hold}) until {@linkcode Session.close}; `false` again once a commit
   * found the lease lost (`LeaseLostError`).
   */
  get held(): boolean {
    return this.#tx.held;
  }

  /**
   * Takes the session for this handle until {@linkcode Session.close}: its `writer.lock` is
   * kept, so commits create and remove no lock file and read no revision (on Node,
   * `active.jsonl` also stays open). Any other writer gets `WriterLockedError` naming this
   * one at once. Each commit first checks, in the same storage call, that the lock is still
   * this handle's (docs/FORMAT.md "Fencing"): if someone removed or took it, the commit writes
   * nothing and fails with `LeaseLostError`, and the handle holds nothing afterwards.
   * Per-operation locking is the default; a long-lived host holds.
   *
   * @example
   * ```ts
   * import { Session } from "sessionfold";
   * declare const session: Session;
   *
   * await session.hold();
   * await session.append({ role: "user", parts: [{ type: "text", text: "fast" }] });
   * await session.close();
   * ```
   * @throws {WriterLockedError} at once when another writer holds the session.
   * @throws {RevisionConflictError} when another writer committed since this handle read.
   */
  hold(): Promise<void> {
    return this.#tx.hold();
  }

  /**
   * Ends this handle's hold on the session (the lock is removed); later operations lock per
   * operation again. Nothing to do for a handle that does not hold. Idempotent.
   */
  close(): Promise<void> {
    return this.#tx.release();
  }

  /**
   * Runs `fn` as one mutating operation: one at a time per session in this process
   * (`SessionBusyError`), under the session's `writer.lock` (`WriterLockedError`),
   * after the optimistic revision check (`RevisionConflictError`) and the repairs that
   * recovery postponed. Used by `run()` and by hosts that build their own operations.
   */
  mutate<T>(operation: string, fn: (writer: SessionWriter) => Promise<T>): Promise<T> {
    return this.#tx.exclusive(operation, () => this.#tx.locked(operation, () => fn(this.#writer())));
  }

  /** What the read view reads: the store, the paths and the current state. */
  #read(): ReadSource {
    return { storage: this.#tx.ctx.storage, paths: this.#tx.paths, state: this.#tx.state };
  }

  async #removeDraft(): Promise<void> {
    await this.#tx.ctx.storage.remove(this.#tx.paths.draft);
    this.#tx.state.draft = undefined;
  }

  /** The writer contract handed to the code inside one locked operation (the run loop). */
  #writer(): SessionWriter {
    const tx = this.#tx;
    const { storage, clock } = tx.ctx;
    const session = this;
    return {
      ref: this.ref,
      get system() {
        return session.system;
      },
      state: tx.state,
      options: tx.options,
      clock,
      commit: (messages) => tx.commit(messages),
      draftWriter: (current) =>
        new DraftWriter(
          (bytes) => storage.replace(tx.paths.draft, bytes),
          () => {
            const { draft, pending } = current();
            return new TextEncoder().encode(`${JSON.stringify({ ...draft, [PENDING_FIELD]: pending })}\n`);
          },
          tx.options.draftFlush,
          clock,
        ),
      removeDraft: () => this.#removeDraft(),
      compact: (summarizer, signal) => compactActive(tx, summarizer, signal),
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
