/**
 * The session handle's writes (`Session`, over its read side `SessionView`): each goes through
 * the commit path (`commit-path.ts`) in the handle's operation slot, recovery's repairs first;
 * compaction and reset are segment closes (`segment-close.ts`), repair a quarantine plan
 * (`repair-plan.ts`), the agent turn the run loop (`run.ts`); this file wires them.
 *
 * @module
 */
import type { CompactionOutcome } from "../compaction/mod.ts";
import { InvalidInputError } from "../errors.ts";
import type { CommitPath } from "./commit-path.ts";
import type { NewMessage } from "./message-input.ts";
import { appendMessages } from "./append-messages.ts";
import { generateSystem } from "./options.ts";
import { repairUnderLock } from "./repair.ts";
import { planRepair, type RepairReport } from "./repair-plan.ts";
import { type RunInput, runLoop, type RunOptions } from "./run.ts";
import { assertRunArguments, onEventOf } from "./run-arguments.ts";
import { type CompactOptions, compactOptions, type RepairOptions, repairOptions } from "./session-call-options.ts";
import { RunHandle } from "./run-events.ts";
import { compactLocked, type NoCompaction, resetActive } from "./segment-close.ts";
import { partsOf, SessionView } from "./session-view.ts";
import { stoppedDraftMessages } from "./state.ts";
import { buildLockedOperation } from "./build-locked-operation.ts";
import type { CommitResult, LockedOperation } from "./locked-operation.ts";

export type { NoCompaction } from "./segment-close.ts";

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
export class Session extends SessionView {
  get #tx(): CommitPath {
    return partsOf(this).tx;
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
   * @throws {InvalidInputError} when a message is not valid, or gives a `message_id` twice or one Active holds.
   * @throws {WriterLockedError} when another writer holds the session.
   * @throws {RevisionConflictError} when another writer committed since this handle read.
   * @throws {SessionBusyError} when another operation runs on this session in this process
   * @throws {CorruptSessionError} when a fatal diagnostic blocks writes.
   */
  append(messages: NewMessage | readonly NewMessage[]): Promise<CommitResult> {
    return appendMessages(this.#tx, messages, false);
  }

  /**
   * Runs one agent turn: the user's input, then provider steps and tool calls until the
   * model answers without tool calls. Streams events; commits per the run's commit contract
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
   * @throws {InvalidInputError} (through `result`) when `input` is not text, `{ parts }` or absent, or `options` is not
   * `{ provider, tools?, signal?, onEvent? }` of those kinds.
   * @throws {CancelledError} (through `result`) after a cooperative cancellation, with the committed revision.
   * @throws {ProviderError} when the provider fails; nothing of the run is committed.
   * @throws {ContextOverflowError} when the input still overflows after the bounded folds.
   * @throws {WriterLockedError} / {RevisionConflictError} / {SessionBusyError} as for `append`.
   */
  run(input: RunInput, options: RunOptions): RunHandle {
    // The arguments are checked when the run starts, so a refusal rejects `result` (and the iteration) like every other failure.
    return new RunHandle(async (emit) => {
      assertRunArguments(input, options);
      return await this.#mutate("run", (locked) => runLoop(locked, input, options, emit));
    }, onEventOf(options));
  }

  /**
   * Finishes a live draft left by an interrupted run as a `stopped` message, committing
   * the run's pending messages with it. Resolves `undefined` when there is no draft.
   *
   * @throws {WriterLockedError} / {RevisionConflictError} / {SessionBusyError} as for `append`.
   */
  finishDraft(): Promise<CommitResult | undefined> {
    return this.#mutate("finish-draft", async (locked) => {
      const draft = this.#tx.state.draft;
      if (!draft) return undefined;
      const messages = stoppedDraftMessages(draft, false);
      // A draft without output and without pending messages has nothing to commit: it is only removed.
      const result = messages.length > 0 ? await locked.commit(messages) : { sequences: [], revision: this.revision };
      await locked.removeDraft();
      return result;
    });
  }

  /**
   * Compacts now (docs/FORMAT.md "Compaction"): the oldest half of Active becomes a segment with one
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
  async compact(options: CompactOptions = {}): Promise<CompactionOutcome | NoCompaction> {
    compactOptions(options);
    const summarizer = options.summarizer ?? this.#tx.options.summarizer;
    if (!summarizer) throw new InvalidInputError("compact() needs a summarizer (session options or the call's)");
    const tx = this.#tx;
    return tx.exclusive("compact", () => compactLocked(tx, summarizer, options.signal ?? new AbortController().signal));
  }

  /**
   * Resets the conversation (docs/decisions.md): the model context starts over from the system
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
    return this.#tx.exclusive("reset", () => this.#tx.locked("reset", () => resetActive(this.#tx), true));
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
  async repair(options: RepairOptions = {}): Promise<RepairReport> {
    const tx = this.#tx;
    if (repairOptions(options).apply !== true) return (await planRepair(tx.ctx.storage, tx.paths, this.ref, tx.ctx.clock)).report;
    return repairUnderLock(tx);
  }

  /**
   * Writes the session's system text to `instruction.md` (creates or overwrites it).
   *
   * @throws {InvalidInputError} when there is no system text to write.
   */
  snapshot(): Promise<void> {
    return this.mutate("snapshot", async () => {
      const system = this.system;
      if (system === null) throw new InvalidInputError("the session has no system text to snapshot (no instruction.md and no agent instruction)");
      await this.#tx.ctx.storage.replace(this.#tx.paths.instruction, new TextEncoder().encode(system));
      this.#tx.state.instruction = system;
    });
  }

  /**
   * Regenerates the system from the agent's current instruction and plugins, and
   * overwrites `instruction.md` only when it already exists.
   */
  regenerateSystem(): Promise<void> {
    return this.mutate("regenerate-system", async () => {
      const { storage } = this.#tx.ctx;
      const { paths, state } = this.#tx;
      const system = generateSystem(this.#tx.options.agent);
      partsOf(this).setSystem(system);
      if (state.instruction !== undefined) {
        if (system === null) await storage.remove(paths.instruction);
        else await storage.replace(paths.instruction, new TextEncoder().encode(system));
        state.instruction = system ?? undefined;
      }
    });
  }

  /**
   * Takes the session for this handle until {@linkcode Session.close}: its `writer.lock` is kept, so commits
   * create and remove no lock file and read no revision (on Node, `active.jsonl` also stays open). Any other
   * writer gets `WriterLockedError` naming this one at once. Each commit first checks, in the same storage
   * call, that the lock is still this handle's (docs/FORMAT.md "Fencing"): if someone removed or took it,
   * the commit writes nothing and fails with `LeaseLostError`, and the handle holds nothing afterwards.
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
   * (`SessionBusyError`), under the session's `writer.lock` (`WriterLockedError`), after the
   * revision check (`RevisionConflictError`) and the repairs recovery postponed.
   */
  mutate<T>(operation: string, fn: () => Promise<T>): Promise<T> {
    return this.#tx.exclusive(operation, () => this.#tx.locked(operation, fn));
  }

  /** `mutate` handing `fn` the locked-operation contract (internal: the run loop and drafts). */
  #mutate<T>(operation: string, fn: (locked: LockedOperation) => Promise<T>): Promise<T> {
    return this.#tx.exclusive(operation, () => this.#tx.locked(operation, () => fn(buildLockedOperation(this.#tx, () => this.system))));
  }
}
