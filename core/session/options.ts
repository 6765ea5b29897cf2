import { assertCompactionPolicy, type CompactionPolicy, manualOnly, realUsage } from "../compaction/mod.ts";
import { assertContextWindow } from "../compaction/trigger.ts";
import { InvalidInputError } from "../errors.ts";
import { assertKnownFields, isPlainObject, type KnownFields, knownOptions } from "../schema/arguments.ts";
import type { DraftFlushOptions } from "./draft-flusher.ts";
import type { Summarizer } from "../model/mod.ts";

/** A plugin adds a section to the agent's system instruction. */
export interface AgentPlugin {
  readonly name: string;
  readonly instruction: string;
}

/** The agent a session talks as: its current instruction and plugins. */
export interface AgentDefinition {
  readonly instruction?: string;
  readonly plugins?: readonly AgentPlugin[];
}

/** How a session is configured when opened or created. Every field is optional. */
export interface SessionOptions {
  /** The agent's current instruction and plugins: the system when `instruction.md` is absent. */
  readonly agent?: AgentDefinition;
  /** The model's context window in tokens; the default policy compacts at 95% of it. */
  readonly contextWindow?: number;
  /**
   * When to compact automatically. Default: `realUsage()` when a summarizer and a
   * context window are given, else `manualOnly()`. An automatic policy without a
   * summarizer is rejected.
   */
  readonly policy?: CompactionPolicy;
  /** Makes the cumulative summary; required by every automatic policy and by `compact()`. */
  readonly summarizer?: Summarizer;
  /** How draft writes are coalesced while streaming. */
  readonly draftFlush?: DraftFlushOptions;
  /** Most provider steps one run may take (default 32). */
  readonly maxSteps?: number;
}

/** The fields of {@linkcode SessionOptions}, for the calls that take them (with their own, spread in). */
export const SESSION_OPTION_FIELDS: KnownFields<SessionOptions> = {
  agent: true,
  contextWindow: true,
  policy: true,
  summarizer: true,
  draftFlush: true,
  maxSteps: true,
};

const AGENT_FIELDS: KnownFields<AgentDefinition> = { instruction: true, plugins: true };
const DRAFT_FLUSH_FIELDS: KnownFields<DraftFlushOptions> = { intervalMs: true, maxPendingBytes: true };

/**
 * Refuses session options (`options`, given at `where`) that are not an object, or have a field that is not one of
 * `known` ({@linkcode SESSION_OPTION_FIELDS} and the call's own), nor one of `agent`'s or `draftFlush`'s. Absent passes.
 *
 * @example
 * ```ts
 * assertSessionOptions({ contextWindw: 128_000 }, "open(ref, options)"); // throws: … unknown field "contextWindw" (did you mean "contextWindow"?) …
 * ```
 * @throws {InvalidInputError} naming the unknown field and where it was given.
 */
export function assertSessionOptions(options: unknown, where: string, known: Readonly<Record<string, true>> = SESSION_OPTION_FIELDS): void {
  if (options === undefined) return;
  knownOptions(options as object, where, known, "an object { contextWindow?, summarizer?, … }");
  const { agent, draftFlush } = options as SessionOptions;
  if (isPlainObject(agent)) assertKnownFields(agent, `${where}.agent`, AGENT_FIELDS);
  if (isPlainObject(draftFlush)) assertKnownFields(draftFlush, `${where}.draftFlush`, DRAFT_FLUSH_FIELDS);
}

/** {@linkcode SessionOptions} with the defaults applied and validated. */
export interface ResolvedSessionOptions extends SessionOptions {
  readonly policy: CompactionPolicy;
  readonly maxSteps: number;
}

/**
 * Applies defaults and refuses inconsistent configurations.
 *
 * @throws {InvalidInputError} for an automatic policy without a summarizer, a
 * real-usage policy without a context window, or out-of-range numbers.
 */
export function resolveSessionOptions(options: SessionOptions = {}): ResolvedSessionOptions {
  if (options.contextWindow !== undefined) assertContextWindow(options.contextWindow);
  const policy = options.policy ?? (options.summarizer && options.contextWindow ? realUsage() : manualOnly());
  // A host's policy is checked; a default is valid as made (`realUsage()` checks its own).
  if (policy === options.policy) assertCompactionPolicy(policy);
  const maxSteps = options.maxSteps ?? 32;
  // The default (manual, no context window, 32 steps) passes every rule below without reaching its error.
  if (policy.kind !== "manual" || !Number.isSafeInteger(maxSteps) || maxSteps < 1) refuseInconsistent(options, policy, maxSteps);
  return { ...options, policy, maxSteps };
}

/**
 * Throws for the first rule `options` (with their `policy` and `maxSteps`) break, if any, in the
 * order {@linkcode resolveSessionOptions} documents; apart, so that an open with the default options
 * compiles none of its errors.
 */
function refuseInconsistent(options: SessionOptions, policy: CompactionPolicy, maxSteps: number): void {
  if (policy.kind !== "manual" && !options.summarizer) {
    throw new InvalidInputError(`compaction policy "${policy.kind}" is automatic but no summarizer is configured`, { policy: policy.kind });
  }
  if (policy.kind === "real-usage" && options.contextWindow === undefined) {
    throw new InvalidInputError(`compaction policy "real-usage" needs contextWindow`, { policy: policy.kind });
  }
  if (!Number.isSafeInteger(maxSteps) || maxSteps < 1) {
    throw new InvalidInputError(`maxSteps ${String(maxSteps)} is not a positive integer`, { maxSteps });
  }
}

/**
 * The system text generated from an agent: its instruction, then one section per plugin.
 * `null` when the agent has neither.
 *
 * @example
 * ```ts
 * generateSystem({ instruction: "Be brief.", plugins: [{ name: "git", instruction: "Use git." }] });
 * // "Be brief.\n\n## git\nUse git."
 * ```
 */
export function generateSystem(agent: AgentDefinition | undefined): string | null {
  const sections = [agent?.instruction ?? "", ...(agent?.plugins ?? []).map((p) => `## ${p.name}\n${p.instruction}`)]
    .filter((s) => s.trim() !== "");
  return sections.length > 0 ? sections.join("\n\n") : null;
}
