/**
 * What DeepCode's own readers accept, ported to check sessionfold's exports (not a test
 * file). Followed: `oratis/deepcode` at 14d0f7f, `packages/core/src/sessions/storage.ts`
 * (`readRecordsFromPath`, `isStoredMessage`, `desktopMeta`), `packages/core/src/types.ts`
 * (`StoredMessage`, `ContentBlock`: `text {text}`, `thinking {text}`, `tool_use {id, name,
 * input: object}`, `tool_result {tool_use_id, content: string, is_error?: boolean}`,
 * `MessageRole = 'user' | 'assistant'`) and `apps/desktop/src-tauri/src/commands.rs`
 * (`parse_session_messages`: every line JSON, a message's `content` an array). The TS
 * reader checks role and that content is an array at run time; the block shapes are its
 * types, which the agent loop relies on, so they are checked here too.
 */
import { expect } from "vitest";

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

/** Problems DeepCode would have with a v1 stream, as `line N: …` strings (empty: it reads it). */
export function deepCodeReaderProblems(bytes: Uint8Array): string[] {
  const raw = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  const problems: string[] = [];
  if (!raw.endsWith("\n")) problems.push("the stream does not end with a newline (DeepCode would treat the last line as torn)");
  const lines = raw.split("\n");
  let header: Json | undefined;
  lines.forEach((text, index) => {
    const line = index + 1;
    if (text.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      problems.push(`line ${line}: invalid JSON`);
      return;
    }
    if (!isObject(value)) return void problems.push(`line ${line}: record must be a JSON object`);
    if (value.type === "session_meta") {
      if (line !== 1) problems.push(`line ${line}: a session_meta after line 1 (DeepCode keeps the first)`);
      header = value;
      if (value.schema_version !== 1) problems.push(`line ${line}: header schema_version ${String(value.schema_version)} (canonical v1 needs 1)`);
      if (typeof value.id !== "string") problems.push(`line ${line}: header id is not a string (desktopMeta drops the header)`);
      if (typeof value.cwd !== "string") problems.push(`line ${line}: header cwd is not a string`);
      for (const key of ["created_at", "updated_at"]) {
        if (typeof value[key] !== "string") problems.push(`line ${line}: header ${key} is not a string (DeepCode would use the file's mtime)`);
      }
      for (const key of ["model", "title"]) {
        if (value[key] !== undefined && typeof value[key] !== "string") problems.push(`line ${line}: header ${key} is not a string`);
      }
      return;
    }
    if (value.type !== "message") return void problems.push(`line ${line}: record type ${JSON.stringify(value.type)} is skipped by DeepCode (not a message)`);
    if (value.schema_version !== 1) problems.push(`line ${line}: message schema_version is not 1`);
    if (value.role !== "user" && value.role !== "assistant") {
      problems.push(`line ${line}: role ${JSON.stringify(value.role)} (isStoredMessage accepts only "user" and "assistant")`);
    }
    if (!Array.isArray(value.content)) return void problems.push(`line ${line}: content is not an array`);
    if (value.timestamp !== undefined && typeof value.timestamp !== "string") problems.push(`line ${line}: timestamp is not a string (DeepCode drops it)`);
    value.content.forEach((block: unknown, i: number) => {
      const where = `line ${line}: content[${i}]`;
      if (!isObject(block)) return void problems.push(`${where} is not an object`);
      switch (block.type) {
        case "text":
        case "thinking":
          if (typeof block.text !== "string") problems.push(`${where}.text is not a string`);
          break;
        case "tool_use":
          if (value.role !== "assistant") problems.push(`${where}: tool_use outside an assistant message`);
          if (typeof block.id !== "string" || typeof block.name !== "string") problems.push(`${where}: tool_use id/name not strings`);
          if (!isObject(block.input)) problems.push(`${where}.input is not an object (ToolUseBlock.input: Record<string, unknown>)`);
          break;
        case "tool_result":
          if (value.role !== "user") problems.push(`${where}: tool_result outside a user message`);
          if (typeof block.tool_use_id !== "string") problems.push(`${where}.tool_use_id is not a string`);
          if (typeof block.content !== "string") problems.push(`${where}.content is not a string (ToolResultBlock.content: string)`);
          if (block.is_error !== undefined && typeof block.is_error !== "boolean") problems.push(`${where}.is_error is not a boolean`);
          break;
        default:
          problems.push(`${where}: block type ${JSON.stringify(block.type)} is not a DeepCode ContentBlock`);
      }
    });
  });
  if (header === undefined) problems.push("no session_meta header");
  return problems;
}

/** Asserts that DeepCode's readers accept `bytes` exactly as written. */
export function expectDeepCodeReads(bytes: Uint8Array): void {
  expect(deepCodeReaderProblems(bytes)).toEqual([]);
}
