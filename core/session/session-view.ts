/**
 * The read side of a session handle (`SessionView`, which `Session` extends with the
 * writes): what the handle knows (revision, `meta.json`, diagnostics, Active, the draft, the
 * newest summary), the model input it composes, and reads of segments and of the whole
 * session for export. Reading is free of I/O except where a method says it reads.
 *
 * @module
 */
import { compose, type ComposedInput } from "../composer/mod.ts";
import type { Diagnostic } from "../jsonl/diagnostic.ts";
import type { SessionRef } from "../layout/ids.ts";
import type { SessionPaths, SessionPlace } from "../layout/paths.ts";
import type { SegmentRange } from "../layout/segments.ts";
import type { PortableSession } from "../model/mod.ts";
import type { MessageRecord, ProviderIdentity, SessionMeta, SummaryRecord } from "../schema/mod.ts";
import { publicRecord } from "./batch.ts";
import { CommitPath } from "./commit-path.ts";
import type { SessionContext } from "./context.ts";
import { type ExportPortableOptions, exportSession } from "./export-portable.ts";
import { generateSystem, type ResolvedSessionOptions } from "./options.ts";
import { messagesBefore, readSegment, type ReadSource, segmentRanges } from "./read-view.ts";
import { type MessagesOptions, messagesOptions } from "./session-call-options.ts";
import type { LiveDraft, SessionState } from "./state.ts";

/** What the write side (`Session`) reaches of its view: the commit path and the system text. */
interface ViewParts {
  readonly tx: CommitPath;
  setSystem(text: string | null): void;
}

/**
 * Reads a view's private parts; set by {@linkcode SessionView}'s static block. A private field, not a `WeakMap` entry:
 * an entry's value (the commit path, holding every record of the open) reaches its key (the view), and V8's young
 * collections keep such an entry, so every open's records were promoted and left to the full collections
 * (docs/decisions.md "The warm open's collections").
 */
let partsOfView: (view: SessionView) => ViewParts;

/** The commit path and system text behind a view, for `Session` (its subclass) only. */
export function partsOf(view: SessionView): ViewParts {
  return partsOfView(view);
}

/**
 * The read side of one session handle; every handle is a {@linkcode Session}, which adds
 * the writes. Get one from {@linkcode Sessions.open} or {@linkcode Sessions.create}.
 *
 * @example
 * ```ts
 * import { SessionView } from "sessionfold";
 * declare const view: SessionView;
 *
 * console.log(view.revision, view.active.length, view.summary?.text);
 * ```
 */
export class SessionView {
  readonly ref: SessionRef;
  readonly place: SessionPlace;
  readonly #tx: CommitPath;
  #system: string | null;
  readonly #parts: ViewParts;

  static {
    partsOfView = (view) => view.#parts;
  }

  /** @internal Use {@linkcode Sessions.open}. */
  constructor(ctx: SessionContext, ref: SessionRef, place: SessionPlace, paths: SessionPaths, state: SessionState, options: ResolvedSessionOptions) {
    this.ref = ref;
    this.place = place;
    this.#system = state.instruction ?? generateSystem(options.agent);
    this.#tx = new CommitPath(ctx, ref, place, paths, state, options, (reloaded) => {
      this.#system = reloaded.instruction ?? this.#system ?? generateSystem(options.agent);
    });
    this.#parts = { tx: this.#tx, setSystem: (text) => (this.#system = text) };
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
    return this.#reading(segmentRanges);
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
  async messages(options: MessagesOptions = {}): Promise<MessageRecord[]> {
    // async: refused options reject the promise, as a failed read does.
    const { beforeSequence } = messagesOptions(options);
    return await this.#reading((source) => messagesBefore(source, beforeSequence));
  }

  /**
   * Reads one whole segment: its messages and its footer.
   *
   * @throws {CorruptSessionError} naming file and line for any invalid line.
   */
  readSegment(range: SegmentRange): Promise<{ messages: MessageRecord[]; footer: SummaryRecord | undefined }> {
    return this.#reading((source) => readSegment(source, range));
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
    return this.#tx.ctx.gate.run(() => exportSession(this.#tx, () => this.#system, options));
  }

  /**
   * Re-reads the session from storage (after another writer committed). Ordered with this
   * handle's operations: it waits for one that is running, and an operation called after it
   * waits for it, so `onCommit(() => session.reload())` followed by `session.run(…)` runs on
   * the reloaded state. (Awaited from inside an operation of the same handle it would wait
   * for itself: that code has the operation's state already.)
   *
   * @throws {UnsupportedSchemaError} when `meta.json` now has an unknown schema version.
   * @throws {NotFoundError} when the session was deleted (or moved: archived, unarchived) since; the handle keeps what it read and writes nothing.
   */
  reload(): Promise<void> {
    return this.#tx.reload();
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
   * A read of the store (the store, the paths and the current state), counted by the store's
   * gate like every operation: closing waits for it, and refuses it once closed (README
   * "Closing a store"), with or without a worker.
   */
  #reading<T>(read: (source: ReadSource) => Promise<T>): Promise<T> {
    return this.#tx.ctx.gate.run(() => read({ storage: this.#tx.ctx.storage, paths: this.#tx.paths, state: this.#tx.state }));
  }
}
