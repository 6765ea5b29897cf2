/**
 * The check of the options of a session handle's calls besides `run` (`run-arguments.ts`): `compact`, `repair` and
 * `messages`. Options that are not an object, or with a field the call does not know (docs/decisions.md "Unknown
 * option fields are refused"), are an `InvalidInputError` before anything is read or written: a misspelt `apply` or
 * `beforeSequence` would otherwise do something else than what was asked, in silence.
 *
 * @module
 */
import type { Summarizer } from "../model/mod.ts";
import { assertFields, assertMethods, type KnownFields, knownOptions } from "../schema/arguments.ts";

/** Options of `Session.compact`. */
export interface CompactOptions {
  /** Cancels the summarizer's call; the compaction then fails with `CompactionFailedError` and nothing changes. */
  readonly signal?: AbortSignal;
  /** The summarizer of this compaction, instead of the session's. */
  readonly summarizer?: Summarizer;
}

/** Options of `Session.repair`. */
export interface RepairOptions {
  /** Carry the plan out (under the session's lock); without it, only plan and report. */
  readonly apply?: boolean;
}

/** Options of `Session.messages`. */
export interface MessagesOptions {
  /** The page of messages before this sequence; without it, the newest page. */
  readonly beforeSequence?: number;
}

const COMPACT_FIELDS: KnownFields<CompactOptions> = { signal: true, summarizer: true };
const REPAIR_FIELDS: KnownFields<RepairOptions> = { apply: true };
const MESSAGES_FIELDS: KnownFields<MessagesOptions> = { beforeSequence: true };

/**
 * `compact`'s options, refused when not an object, with a field it does not know, a signal that is not an
 * `AbortSignal` (by shape) or a summarizer without `summarize`.
 *
 * @example
 * ```ts
 * compactOptions({ signal: new AbortController().signal }); // the options
 * compactOptions({ signal: { aborted: "no" } } as never); // throws: compact(options).signal: expected an AbortSignal …
 * ```
 * @throws {InvalidInputError} naming the field, what was expected and what was found.
 */
export function compactOptions(options: CompactOptions): CompactOptions {
  knownOptions(options, "compact(options)", COMPACT_FIELDS);
  assertFields(options, "compact(options)", { signal: "abort-signal" });
  if (options.summarizer !== undefined) assertMethods(options.summarizer, "compact(options).summarizer", "a Summarizer { summarize }", ["summarize"]);
  return options;
}

/**
 * `repair`'s options, refused when not an object or with a field it does not know.
 *
 * @example
 * ```ts
 * repairOptions({ apply: true }); // { apply: true }
 * ```
 * @throws {InvalidInputError} naming the field.
 */
export function repairOptions(options: RepairOptions): RepairOptions {
  return knownOptions(options, "repair(options)", REPAIR_FIELDS);
}

/**
 * `messages`'s options, refused when not an object or with a field it does not know.
 *
 * @example
 * ```ts
 * messagesOptions({ beforeSequence: 10 }); // { beforeSequence: 10 }
 * ```
 * @throws {InvalidInputError} naming the field.
 */
export function messagesOptions(options: MessagesOptions): MessagesOptions {
  return knownOptions(options, "messages(options)", MESSAGES_FIELDS);
}
