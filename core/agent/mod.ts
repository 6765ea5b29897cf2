/**
 * Agent definitions: `agents/<agent_id>/agent.jsonc`, JSON with comments, read into
 * {@linkcode AgentConfig} and mapped to the {@linkcode SessionOptions} of the agent's
 * sessions. Errors name the file, line and column of the offending value.
 *
 * @example
 * ```ts
 * import { MemoryStorage, Sessions } from "sessionfold";
 * declare const sessions: Sessions;
 * const storage = new MemoryStorage();
 *
 * import { agentModelLabel, agentSessionOptions, readAgentConfig, DEFAULT_AGENT_CONFIG } from "sessionfold";
 * const config = (await readAgentConfig(storage, "a1")) ?? DEFAULT_AGENT_CONFIG;
 * const session = await sessions.create({ agentId: "a1", workspaceId: "w1", modelLabel: agentModelLabel(config) });
 * const options = agentSessionOptions(config); // agent, contextWindow, policy, summarizer
 * ```
 * @module
 */
export { AgentCompactionConfig, AgentConfig, AgentPluginConfig, AgentSummarizerConfig, DEFAULT_AGENT_CONFIG } from "./config.ts";
export { AgentConfigError, type AgentConfigErrorDetails } from "./error.ts";
export { parseAgentConfig, readAgentConfig } from "./parse.ts";
export { type AgentHost, agentModelLabel, agentSessionOptions } from "./options.ts";
export { formatAgentConfig } from "./format.ts";
