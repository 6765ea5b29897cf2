import { type ErrorDetails, SessionfoldError } from "../errors.ts";

/**
 * Where an agent file is wrong. `line` and `column` are 1-based (`column` counts
 * UTF-16 code units, as editors and `tsc` do); `path` names the offending field
 * (`plugins[1].name`), or is `null` for a syntax error. A schema error also lists
 * every problem found in `issues` (`{ path, message, line, column }`, in document order).
 *
 * @example
 * ```ts
 * const details: AgentConfigErrorDetails = { file: "agents/a1/agent.jsonc", line: 4, column: 21, path: "context_window" };
 * ```
 * @throws nothing: it is a type.
 */
export interface AgentConfigErrorDetails extends ErrorDetails {
  file: string;
  line: number;
  column: number;
  path: string | null;
}

/**
 * An agent file (`agents/<agent_id>/agent.jsonc`) that is not valid JSONC or not a
 * valid agent definition. Its message starts with `file:line:column:` so editors and
 * terminals can jump to it; `code` is `"invalid-input"`.
 *
 * @example
 * ```ts
 * import { parseAgentConfig } from "sessionfold";
 * declare const text: string;
 *
 * try { parseAgentConfig(text, "agents/a1/agent.jsonc"); } catch (e) {
 *   if (e instanceof AgentConfigError) console.error(e.message);
 *   // agents/a1/agent.jsonc:4:21: context_window: expected a positive integer
 * }
 * ```
 * @throws nothing itself; {@linkcode parseAgentConfig} and {@linkcode readAgentConfig} throw it.
 */
export class AgentConfigError extends SessionfoldError {
  override readonly name: string = "AgentConfigError";
  declare readonly details: AgentConfigErrorDetails;

  constructor(message: string, details: AgentConfigErrorDetails) {
    super("invalid-input", message, details);
  }
}
