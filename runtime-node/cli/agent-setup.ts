/**
 * The agent file of an agent, as the CLI's commands that run one use it: the session
 * options, the model label and the summarizer `<root>/agents/<agent_id>/agent.jsonc` gives.
 * Its own module, so a command that never reads an agent file (`show`, `ls`) does not load
 * the agent definitions and their JSONC parser.
 *
 * @module
 */
import { join } from "node:path";
import {
  type AgentConfig,
  AgentConfigError,
  agentConfigPath,
  agentModelLabel,
  agentSessionOptions,
  ExtractiveSummarizer,
  parseAgentConfig,
  type SessionOptions,
  type Summarizer,
} from "../../core/mod.ts";
import type { OpenStore } from "./store.ts";

/** What an agent file gives the CLI. */
export interface AgentSetup {
  /** The options sessions of this agent are opened with (`{}` without an agent file). */
  readonly options: SessionOptions;
  /** For `new`: `meta.json`'s `model_label`. */
  readonly modelLabel: string | undefined;
  /** The summarizer `compact` uses: the configured one, else the offline extractive one. */
  readonly summarizer: Summarizer;
  /** The parsed agent file, when there is one. */
  readonly config: AgentConfig | undefined;
  /** The agent file's absolute path, when there is one. */
  readonly file: string | undefined;
}

/**
 * Reads `<root>/agents/<agent_id>/agent.jsonc` when it exists and maps it to session
 * options. The CLI is the host of a `summarizer: {kind: "host"}` agent: its summarizer
 * is the offline {@linkcode ExtractiveSummarizer}.
 *
 * @throws {AgentConfigError} (`invalid-input`) naming `file:line:column` when the file is not valid.
 */
export async function loadAgent(store: OpenStore | undefined, agentId: string): Promise<AgentSetup> {
  const path = agentConfigPath(agentId);
  const bytes = store ? await store.storage.read(path) : undefined;
  const fallback = new ExtractiveSummarizer();
  if (bytes === undefined) return { options: {}, modelLabel: undefined, summarizer: fallback, config: undefined, file: undefined };
  const file = join(store!.root, path);
  const config = parseAgentConfig(decodeAgentFile(bytes, file), file);
  const options = agentSessionOptions(config, { summarizer: fallback });
  return { options, modelLabel: agentModelLabel(config), summarizer: options.summarizer ?? fallback, config, file };
}

function decodeAgentFile(bytes: Uint8Array, file: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    // Locate the first byte the lenient decoder had to replace, as an editor would.
    const lenient = new TextDecoder("utf-8").decode(bytes);
    const before = lenient.slice(0, Math.max(0, lenient.indexOf("\uFFFD")));
    const line = before.split("\n").length;
    const column = before.length - before.lastIndexOf("\n");
    throw new AgentConfigError(`${file}:${line}:${column}: not valid UTF-8`, { file, line, column, path: null });
  }
}
