import { InvalidInputError } from "../errors.ts";
import { describeIssues } from "../schema/parse.ts";
import { AgentConfig } from "./config.ts";

const HEADER = [
  "// sessionfold agent definition: agents/<agent_id>/agent.jsonc",
  "// JSON with comments; trailing commas are allowed; fields sessionfold does not know are kept.",
];

/** The comment above each known field, in the order they are written. */
const FIELD_COMMENTS: ReadonlyArray<readonly [string, readonly string[]]> = [
  ["instruction", ["The agent's system instruction, used by sessions that have no instruction.md."]],
  ["plugins", ['Sections appended to the instruction: [{ "name": "…", "instruction": "…" }].']],
  ["model_label", ["A label for the model, copied into each new session's meta.json."]],
  ["context_window", ["The model's context window, in tokens."]],
  [
    "compaction",
    [
      'When to compact: "real-usage" (ratio of context_window reached by real usage, default 0.95),',
      '"after-messages" (messages), "at-context-tokens" (tokens, estimated) or "manual".',
    ],
  ],
  [
    "summarizer",
    [
      'Who writes the cumulative summary: "extractive" (built in, no network; max_chars)',
      'or "host" (the application supplies its own).',
    ],
  ],
];

/**
 * Writes an agent definition as readable JSONC: a header comment, then each known
 * field with a comment saying what it does, then any unknown fields as they were.
 * `parseAgentConfig(formatAgentConfig(c), file)` deep-equals `c`.
 *
 * @example
 * ```ts
 * import { DEFAULT_AGENT_CONFIG, MemoryStorage, agentConfigPath } from "sessionfold";
 * const storage = new MemoryStorage();
 *
 * await storage.replace(agentConfigPath("a1"), new TextEncoder().encode(formatAgentConfig(DEFAULT_AGENT_CONFIG)));
 * ```
 * @throws {InvalidInputError} when `config` is not a valid {@linkcode AgentConfig}, so an
 * invalid file is never written.
 */
export function formatAgentConfig(config: AgentConfig): string {
  const checked = AgentConfig.safeParse(config);
  if (!checked.success) throw new InvalidInputError(`invalid agent config: ${describeIssues(checked.error)}`, {});
  const known = new Set(FIELD_COMMENTS.map(([key]) => key));
  const entries: string[] = [];
  const add = (key: string, value: unknown, comment: readonly string[]) => {
    if (value === undefined) return;
    const json = JSON.stringify(value, null, 2).replaceAll("\n", "\n  ");
    entries.push([...comment.map((line) => `  // ${line}`), `  ${JSON.stringify(key)}: ${json}`].join("\n"));
  };
  for (const [key, comment] of FIELD_COMMENTS) add(key, config[key], comment);
  for (const [key, value] of Object.entries(config)) if (!known.has(key)) add(key, value, []);
  const body = entries.length === 0 ? "{}" : `{\n${entries.join(",\n")}\n}`;
  return `${HEADER.join("\n")}\n${body}\n`;
}
