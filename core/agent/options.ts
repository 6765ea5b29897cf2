import { afterMessages, atContextTokens, type CompactionPolicy, manualOnly, realUsage } from "../compaction/policy.ts";
import { InvalidInputError } from "../errors.ts";
import { describeIssues } from "../schema/parse.ts";
import { type AgentDefinition, resolveSessionOptions, type SessionOptions } from "../session/options.ts";
import type { Summarizer } from "../model/mod.ts";
import { ExtractiveSummarizer } from "../summarizer/extractive.ts";
import { type AgentCompactionConfig, AgentConfig } from "./config.ts";

/**
 * What the host plugs into an agent's sessions that a file cannot hold.
 *
 * @example
 * ```ts
 * import { ExtractiveSummarizer } from "sessionfold";
 * const myModelSummarizer = new ExtractiveSummarizer();
 * const host: AgentHost = { summarizer: myModelSummarizer };
 * ```
 * @throws nothing: it is a type; {@linkcode agentSessionOptions} throws when a required field is absent.
 */
export interface AgentHost {
  /**
   * The host's own summarizer: required by `summarizer: { kind: "host" }`, and used
   * when the file names no summarizer at all.
   */
  readonly summarizer?: Summarizer;
}

/**
 * The {@linkcode SessionOptions} an agent file asks for, ready for `Sessions` (as
 * `defaults`) or `sessions.open(ref, options)`.
 *
 * - `agent`: the file's `instruction` and `plugins` (their `name` and `instruction`).
 * - `contextWindow`: `context_window`.
 * - `policy`: `compaction` mapped to `realUsage(ratio)`, `afterMessages(messages)`,
 *   `atContextTokens(tokens)` or `manualOnly()`; left out without `compaction`, so the
 *   session default applies (real usage at 95% when there is a context window).
 * - `summarizer`: `extractive` → a new {@linkcode ExtractiveSummarizer} (`max_chars`);
 *   `host` → `host.summarizer`; no `summarizer` field → `host.summarizer` if given, else
 *   an {@linkcode ExtractiveSummarizer}, so every agent file can compact.
 *
 * `model_label` has no place in `SessionOptions`; read it with {@linkcode agentModelLabel}.
 *
 * @example
 * ```ts
 * import { Sessions, parseAgentConfig } from "sessionfold";
 * const ref = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
 * declare const sessions: Sessions;
 * declare const text: string;
 *
 * const config = parseAgentConfig(text, "agents/a1/agent.jsonc");
 * import { ExtractiveSummarizer } from "sessionfold";
 * const mine = new ExtractiveSummarizer();
 * const session = await sessions.open(ref, agentSessionOptions(config, { summarizer: mine }));
 * ```
 * @throws {InvalidInputError} when `config` is not a valid {@linkcode AgentConfig} (a
 * config built in code), when it asks for a host summarizer and `host.summarizer` is
 * absent, or when the options it maps to are inconsistent (see `resolveSessionOptions`).
 */
export function agentSessionOptions(config: AgentConfig, host: AgentHost = {}): SessionOptions {
  const checked = AgentConfig.safeParse(config);
  if (!checked.success) {
    throw new InvalidInputError(`invalid agent config: ${describeIssues(checked.error)}`, {});
  }
  const valid = checked.data;
  const agent: AgentDefinition = {
    ...(valid.instruction !== undefined ? { instruction: valid.instruction } : {}),
    ...(valid.plugins !== undefined ? { plugins: valid.plugins.map(({ name, instruction }) => ({ name, instruction })) } : {}),
  };
  const options: SessionOptions = {
    agent,
    ...(valid.context_window !== undefined ? { contextWindow: valid.context_window } : {}),
    ...(valid.compaction !== undefined ? { policy: compactionPolicy(valid.compaction) } : {}),
    summarizer: summarizerFor(valid, host),
  };
  resolveSessionOptions(options); // refuse now what opening a session would refuse later
  return options;
}

/**
 * The agent's `model_label`, for `sessions.create({ modelLabel })` (it becomes
 * `meta.json`'s `model_label`).
 *
 * @example
 * ```ts
 * import { Sessions } from "sessionfold";
 * declare const sessions: Sessions;
 *
 * import { DEFAULT_AGENT_CONFIG } from "sessionfold";
 * const config = DEFAULT_AGENT_CONFIG;
 * await sessions.create({ agentId: "a1", workspaceId: "w1", modelLabel: agentModelLabel(config) });
 * ```
 * @throws nothing: a missing or empty label is `undefined`.
 */
export function agentModelLabel(config: AgentConfig): string | undefined {
  return typeof config.model_label === "string" && config.model_label !== "" ? config.model_label : undefined;
}

function compactionPolicy(compaction: AgentCompactionConfig): CompactionPolicy {
  switch (compaction.policy) {
    case "real-usage":
      return realUsage(compaction.ratio);
    case "after-messages":
      return afterMessages(compaction.messages);
    case "at-context-tokens":
      return atContextTokens(compaction.tokens);
    case "manual":
      return manualOnly();
  }
}

function summarizerFor(config: AgentConfig, host: AgentHost): Summarizer {
  const wanted = config.summarizer;
  if (wanted?.kind === "host") {
    if (host.summarizer === undefined) {
      throw new InvalidInputError('the agent requires a host summarizer (summarizer.kind "host") but none was given', {
        summarizer: "host",
      });
    }
    return host.summarizer;
  }
  if (wanted?.kind === "extractive") {
    return new ExtractiveSummarizer(wanted.max_chars !== undefined ? { maxChars: wanted.max_chars } : {});
  }
  return host.summarizer ?? new ExtractiveSummarizer();
}
