import type { Value } from "../shape.ts";

/** A DeepCode content block, validated; `at` is where it was read (for errors). */
export type DeepCodeBlock =
  | { readonly type: "text"; readonly text: string; readonly at: Value }
  | { readonly type: "thinking"; readonly text: string; readonly at: Value }
  | { readonly type: "tool_use"; readonly id: string; readonly name: string; readonly input: unknown; readonly at: Value }
  | { readonly type: "tool_result"; readonly toolUseId: string; readonly content: unknown; readonly isError: boolean; readonly at: Value };

const BLOCK_TYPES = '"text", "thinking", "tool_use" or "tool_result"';

/**
 * Validates a message's `content`: an array of blocks `text{text}`, `thinking{text}`,
 * `tool_use{id, name, input}`, `tool_result{tool_use_id, content, is_error?}`. A plain
 * string is accepted as one text block (it loses nothing). Unknown fields are ignored.
 *
 * @example
 * ```ts
 * declare const record: { field(name: string): Parameters<typeof parseDeepCodeContent>[0] };
 * const blocks = parseDeepCodeContent(record.field("content"));
 * ```
 * @throws {FormatError} naming the block's path when a block is not one of these.
 */
export function parseDeepCodeContent(content: Value): DeepCodeBlock[] {
  if (typeof content.raw === "string") return [{ type: "text", text: content.raw, at: content }];
  return content.array("an array of content blocks (or a string)").map(parseBlock);
}

function parseBlock(block: Value): DeepCodeBlock {
  block.object(`a content block: an object whose type is ${BLOCK_TYPES}`);
  const type = block.field("type");
  switch (type.raw) {
    case "text":
      return { type: "text", text: block.field("text").string(), at: block };
    case "thinking":
      return { type: "thinking", text: block.field("text").string(), at: block };
    case "tool_use": {
      const input = block.field("input");
      if (input.raw === undefined) input.fail("the tool's input (any JSON value)");
      return {
        type: "tool_use",
        id: block.field("id").string({ nonEmpty: true }),
        name: block.field("name").string({ nonEmpty: true }),
        input: input.raw,
        at: block,
      };
    }
    case "tool_result": {
      const content = block.field("content");
      if (content.raw === undefined) content.fail("the tool's result (any JSON value)");
      const isError = block.field("is_error").optional()?.boolean() ?? false;
      return { type: "tool_result", toolUseId: block.field("tool_use_id").string({ nonEmpty: true }), content: content.raw, isError, at: block };
    }
    default:
      return type.fail(BLOCK_TYPES);
  }
}
