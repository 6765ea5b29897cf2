import type { Value } from "../shape.ts";

/** A part before its sequence is assigned. */
export type LooseClaudePart = { type: string } & Record<string, unknown>;

/** A validated `tool_result` block: the call it answers and its content. */
export interface ClaudeToolResult {
  readonly id: string;
  readonly at: Value;
  readonly isError: boolean;
  readonly content: unknown;
}

/**
 * A user record's `message.content`: a string, or blocks `text`, `image` and `tool_result`.
 *
 * @example
 * ```ts
 * import { MessageRecord } from "sessionfold";
 * declare const message: MessageRecord;
 *
 * declare const content: Parameters<typeof userBlocks>[0];
 * const { parts, results } = userBlocks(content);
 * ```
 * @throws {FormatError} at the first block of another type.
 */
export function userBlocks(content: Value): { parts: LooseClaudePart[]; results: ClaudeToolResult[] } {
  if (typeof content.raw === "string") return { parts: [{ type: "text", text: content.raw }], results: [] };
  const parts: LooseClaudePart[] = [];
  const results: ClaudeToolResult[] = [];
  for (const block of content.array("a string or an array of content blocks")) {
    block.object('a content block whose type is "text", "image" or "tool_result"');
    const type = block.field("type");
    if (type.raw === "text") parts.push({ type: "text", text: block.field("text").string() });
    else if (type.raw === "image") parts.push(imagePart(block));
    else if (type.raw === "tool_result") {
      const idField = block.field("tool_use_id");
      const inner = block.field("content");
      if (inner.raw !== undefined && typeof inner.raw !== "string") {
        for (const item of inner.array("a string or an array of text and image blocks")) resultBlock(item);
      }
      results.push({
        id: idField.string({ nonEmpty: true }),
        at: idField,
        isError: block.field("is_error").optional()?.boolean() ?? false,
        content: inner.raw ?? "",
      });
    } else type.fail('"text", "image" or "tool_result"');
  }
  return { parts, results };
}

function resultBlock(item: Value): void {
  item.object('a block whose type is "text" or "image"');
  const type = item.field("type");
  if (type.raw === "text") item.field("text").string();
  else if (type.raw === "image") imagePart(item);
  else type.fail('"text" or "image"');
}

function imagePart(block: Value): LooseClaudePart {
  const source = block.field("source").object("the image source object");
  const kind = source.field("type");
  if (kind.raw === "base64") return { type: "file", media_type: source.field("media_type").string({ nonEmpty: true }), data: source.field("data").string() };
  if (kind.raw === "url") {
    return {
      type: "file",
      media_type: source.field("media_type").optional()?.string({ nonEmpty: true }) ?? "image/*",
      url: source.field("url").string({ nonEmpty: true }),
    };
  }
  return kind.fail('"base64" or "url"');
}

/**
 * An assistant record's `message.content` blocks as parts: `text`; `thinking` as a
 * reasoning part plus, when signed, a provider-context part holding the signed block (only
 * the same provider can be given it back); `redacted_thinking` as provider context;
 * `tool_use` as a tool part.
 *
 * @example
 * ```ts
 * import { MessageRecord } from "sessionfold";
 * declare const message: MessageRecord;
 *
 * declare const content: Parameters<typeof assistantBlocks>[0];
 * const model = "claude-sonnet-4-5";
 * assistantBlocks(content, { provider: "anthropic", api: "messages", model });
 * ```
 * @throws {FormatError} at the first block of another type.
 */
export function assistantBlocks(content: Value, identity: { provider: string; api: string; model: string }): LooseClaudePart[] {
  if (typeof content.raw === "string") return [{ type: "text", text: content.raw }];
  const parts: LooseClaudePart[] = [];
  for (const block of content.array("an array of content blocks")) {
    block.object('a content block whose type is "text", "thinking", "redacted_thinking" or "tool_use"');
    const type = block.field("type");
    switch (type.raw) {
      case "text":
        parts.push({ type: "text", text: block.field("text").string() });
        break;
      case "thinking": {
        const thinking = block.field("thinking").string();
        const signature = block.field("signature").optional()?.string();
        parts.push({ type: "reasoning", text: thinking });
        if (signature) parts.push({ type: "provider-context", ...identity, kind: "thinking", data: { type: "thinking", thinking, signature } });
        break;
      }
      case "redacted_thinking":
        parts.push({
          type: "provider-context",
          ...identity,
          kind: "redacted_thinking",
          data: { type: "redacted_thinking", data: block.field("data").string() },
        });
        break;
      case "tool_use": {
        const input = block.field("input");
        if (input.raw === undefined) input.fail("the tool's input (any JSON value)");
        parts.push({
          type: "tool",
          tool_call_id: block.field("id").string({ nonEmpty: true }),
          tool_name: block.field("name").string({ nonEmpty: true }),
          state: "input-available",
          input: input.raw,
        });
        break;
      }
      default:
        type.fail('"text", "thinking", "redacted_thinking" or "tool_use"');
    }
  }
  return parts;
}
