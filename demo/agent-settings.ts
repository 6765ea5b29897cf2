/**
 * The playground's agent definition: `agents/demo/agent.jsonc`, JSON with comments,
 * stored in IndexedDB beside the sessions and validated with the core's
 * `parseAgentConfig` (errors carry the file, line and column).
 */
import {
  type AgentConfig,
  AgentConfigError,
  agentConfigPath,
  agentSessionOptions,
  formatAgentConfig,
  parseAgentConfig,
  SessionfoldError,
  type SessionOptions,
  type StoragePort,
} from "../core/mod.ts";

/** The agent every playground session belongs to. */
export const AGENT_ID = "demo";
/** The workspace of the playground's sessions. */
export const WORKSPACE_ID = "playground";
/** Where the agent file lives, as errors name it. */
export const AGENT_FILE = agentConfigPath(AGENT_ID);

/** The playground's defaults: a small window, so compaction shows within a few turns. */
export const PLAYGROUND_AGENT_CONFIG: AgentConfig = {
  instruction:
    "You are the sessionfold playground assistant, running entirely in this browser tab. Answer in short Markdown: a bold lead sentence, a few bullets, a code sample when it helps. Use the tools when they help: clock for the date and time, calculator for arithmetic, dice for rolls. When asked about earlier messages, rely on the cumulative summary and the Active window.",
  plugins: [],
  model_label: "local-1",
  context_window: 2000,
  compaction: { policy: "real-usage", ratio: 0.95 },
  summarizer: { kind: "extractive", max_chars: 1000 },
};

/** The default file's text, with a comment on every field. */
export const DEFAULT_AGENT_TEXT = formatAgentConfig(PLAYGROUND_AGENT_CONFIG);

/** One problem in the agent file, located for the editor. */
export interface SettingsProblem {
  readonly line: number;
  readonly column: number;
  /** The field, e.g. `compaction.ratio`; empty for a syntax error. */
  readonly path: string;
  readonly message: string;
}

/** A checked agent file: the config and the session options it maps to, or its problems. */
export type CheckedSettings =
  | { readonly ok: true; readonly config: AgentConfig; readonly options: SessionOptions }
  | { readonly ok: false; readonly summary: string; readonly problems: readonly SettingsProblem[] };

/** Parses and validates the agent file's text. Never throws. */
export function checkSettings(text: string): CheckedSettings {
  let config: AgentConfig;
  try {
    config = parseAgentConfig(text, AGENT_FILE);
  } catch (error) {
    if (error instanceof AgentConfigError) {
      const details = error.details as AgentConfigError["details"] & { issues?: { path: string; message: string; line: number; column: number }[] };
      const problems: SettingsProblem[] = details.issues?.length
        ? details.issues.map((i) => ({ line: i.line, column: i.column, path: i.path, message: i.message }))
        : [{ line: details.line, column: details.column, path: details.path ?? "", message: error.message.replace(/^.*?:\d+:\d+: /, "") }];
      return { ok: false, summary: error.message, problems };
    }
    return { ok: false, summary: String(error), problems: [] };
  }
  try {
    return { ok: true, config, options: agentSessionOptions(config) };
  } catch (error) {
    // Valid JSONC and schema, but options the engine refuses (e.g. a host summarizer).
    const message = error instanceof SessionfoldError ? error.message : String(error);
    return { ok: false, summary: `${AGENT_FILE}: ${message}`, problems: [{ line: 1, column: 1, path: "", message }] };
  }
}

/** Reads the stored agent file, or the default text when there is none. */
export async function loadSettingsText(storage: StoragePort): Promise<string> {
  const bytes = await storage.read(AGENT_FILE);
  return bytes ? new TextDecoder().decode(bytes) : DEFAULT_AGENT_TEXT;
}

/** Stores the agent file's text as typed (comments kept). */
export async function saveSettingsText(storage: StoragePort, text: string): Promise<void> {
  await storage.replace(AGENT_FILE, new TextEncoder().encode(text));
}
