import { type Node, parse, type ParseError, type ParseOptions, parseTree, printParseErrorCode } from "jsonc-parser";
import type { z } from "zod";
import { agentConfigPath } from "../layout/paths.ts";
import type { StoragePort } from "../storage/port.ts";
import { AgentConfig } from "./config.ts";
import { AgentConfigError } from "./error.ts";

const PARSE_OPTIONS: ParseOptions = { allowTrailingComma: true, disallowComments: false, allowEmptyContent: false };

/**
 * Parses an agent file: JSON with comments and trailing commas, validated against
 * {@linkcode AgentConfig}. Unknown fields are kept. A leading BOM is ignored.
 *
 * @param text the file's content.
 * @param file the path to name in errors, e.g. `agents/a1/agent.jsonc`.
 * @example
 * ```ts
 * const config = parseAgentConfig('{ "context_window": 128000, // tokens\n}', "agents/a1/agent.jsonc");
 * config.context_window; // 128000
 * ```
 * @throws {AgentConfigError} for a syntax error (`file:line:column: syntax error: comma expected`)
 * or a schema error, located at the offending value (`file:line:column: compaction.messages:
 * expected a positive integer`); a missing field is located at the object that should hold it.
 */
export function parseAgentConfig(text: string, file: string): AgentConfig {
  const source = text.startsWith("\uFEFF") ? text.slice(1) : text;
  const errors: ParseError[] = [];
  const value: unknown = parse(source, errors, PARSE_OPTIONS);
  if (errors.length > 0) {
    const first = [...errors].sort((a, b) => a.offset - b.offset)[0]!;
    const { line, column } = lineColumn(source, first.offset);
    throw new AgentConfigError(`${file}:${line}:${column}: syntax error: ${describeParseError(first)}`, {
      file,
      line,
      column,
      path: null,
      syntax_error: printParseErrorCode(first.error),
    });
  }
  const result = AgentConfig.safeParse(value);
  if (!result.success) throw schemaError(source, file, result.error);
  return result.data;
}

/**
 * Reads and parses `agents/<agent_id>/agent.jsonc` from a store.
 *
 * @example
 * ```ts
 * import { DEFAULT_AGENT_CONFIG, MemoryStorage } from "sessionfold";
 * const storage = new MemoryStorage();
 *
 * const config = (await readAgentConfig(storage, "a1")) ?? DEFAULT_AGENT_CONFIG;
 * ```
 * @returns the config, or `undefined` when the agent has no file.
 * @throws {InvalidIdError} when `agentId` is not a valid id.
 * @throws {AgentConfigError} when the file is not UTF-8, not JSONC or not a valid agent definition.
 */
export async function readAgentConfig(storage: StoragePort, agentId: string): Promise<AgentConfig | undefined> {
  const file = agentConfigPath(agentId);
  const bytes = await storage.read(file);
  if (bytes === undefined) return undefined;
  return parseAgentConfig(decodeAgentFile(bytes, file), file);
}

function decodeAgentFile(bytes: Uint8Array, file: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    // Locate the first replacement character the lenient decoder had to insert.
    const lenient = new TextDecoder("utf-8").decode(bytes);
    const { line, column } = lineColumn(lenient, Math.max(0, lenient.indexOf("\uFFFD")));
    throw new AgentConfigError(`${file}:${line}:${column}: not valid UTF-8`, { file, line, column, path: null });
  }
}

function describeParseError(error: ParseError): string {
  // "CommaExpected" → "comma expected"
  return printParseErrorCode(error.error)
    .replace(/([a-z])([A-Z])/g, "$1 $2")
    .toLowerCase();
}

function schemaError(source: string, file: string, error: z.ZodError): AgentConfigError {
  const tree = parseTree(source, [], PARSE_OPTIONS);
  const located = error.issues
    .map((issue) => {
      const path = issue.path.filter((key): key is string | number => typeof key !== "symbol");
      return { path: formatPath(path), message: issue.message, ...lineColumn(source, valueOffset(tree, path)) };
    })
    .sort((a, b) => a.line - b.line || a.column - b.column);
  const first = located[0]!;
  const where = first.path === "" ? "" : `${first.path}: `;
  const more = located.length > 1 ? ` (and ${located.length - 1} more)` : "";
  return new AgentConfigError(`${file}:${first.line}:${first.column}: ${where}${first.message}${more}`, {
    file,
    line: first.line,
    column: first.column,
    path: first.path,
    issues: located,
  });
}

/**
 * Offset of the value at `path`, or of the nearest enclosing value that exists (a
 * missing field is reported at the object that should hold it). Like jsonc-parser's
 * `findNodeAtLocation`, except that a duplicated key resolves to its last occurrence,
 * the one `parse` keeps.
 */
function valueOffset(root: Node | undefined, path: readonly (string | number)[]): number {
  if (root === undefined) return 0;
  let node = root;
  for (const key of path) {
    const next = child(node, key);
    if (next === undefined) break;
    node = next;
  }
  return node.offset;
}

function child(node: Node, key: string | number): Node | undefined {
  if (typeof key === "number") return node.type === "array" ? node.children?.[key] : undefined;
  if (node.type !== "object") return undefined;
  let found: Node | undefined;
  for (const property of node.children ?? []) {
    const [name, value] = property.children ?? [];
    if (name?.value === key && value !== undefined) found = value;
  }
  return found;
}

/** `["plugins", 1, "name"]` → `plugins[1].name`. */
function formatPath(path: readonly (string | number)[]): string {
  return path.reduce<string>(
    (out, key) => (typeof key === "number" ? `${out}[${key}]` : out === "" ? key : `${out}.${key}`),
    "",
  );
}

/** 1-based line and column of a string offset; `\n`, `\r\n` and `\r` each end a line. */
function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x0a || (code === 0x0d && text.charCodeAt(i + 1) !== 0x0a)) {
      line += 1;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}
