import type { MessagePart } from "../../schema/message.ts";
import type { Value } from "../shape.ts";

/** A part before its sequence is assigned. */
export type LooseCodexPart = { type: MessagePart["type"] } & Record<string, unknown>;

/**
 * A Codex message's `content` (`input_text`, `output_text`, `input_image`) as parts: text
 * as text parts, an image as a file part (a `data:` URL split into media type and base64
 * data, any other URL kept as the part's `url`).
 *
 * @example
 * ```ts
 * declare const item: { field(name: string): Parameters<typeof contentParts>[0] };
 * contentParts(item.field("content")); // [{ type: "text", text: "hi" }]
 * ```
 * @throws {FormatError} at the first item that is none of these.
 */
export function contentParts(content: Value): LooseCodexPart[] {
  return content.array("an array of content items").map((item): LooseCodexPart => {
    item.object('a content item whose type is "input_text", "output_text" or "input_image"');
    const type = item.field("type");
    switch (type.raw) {
      case "input_text":
      case "output_text":
        return { type: "text", text: item.field("text").string() };
      case "input_image":
        return imagePart(item.field("image_url"));
      default:
        return type.fail('"input_text", "output_text" or "input_image"');
    }
  });
}

function imagePart(url: Value): LooseCodexPart {
  const text = url.string({ nonEmpty: true });
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(text);
  if (data) return { type: "file", media_type: data[1]!, data: data[2]! };
  return { type: "file", media_type: "image/*", url: text };
}

/**
 * A `function_call_output` payload: a string (the output), an array of content items (an
 * MCP tool's richer output, kept as the items), or the older `{content, success}` object
 * (`success: false` is an error).
 *
 * @example
 * ```ts
 * declare const item: { field(name: string): Parameters<typeof parseFunctionOutput>[0] };
 * parseFunctionOutput(item.field("output")); // { ok: true, value: "exit 0" }
 * ```
 * @throws {FormatError} when it is none of these.
 */
export function parseFunctionOutput(output: Value): { ok: boolean; value: unknown } {
  if (typeof output.raw === "string") return { ok: true, value: output.raw };
  if (Array.isArray(output.raw)) {
    for (const item of output.array()) {
      item.object('a content item whose type is "input_text" or "input_image"');
      const type = item.field("type");
      if (type.raw === "input_text") item.field("text").string();
      else if (type.raw === "input_image") item.field("image_url").string();
      else type.fail('"input_text" or "input_image"');
    }
    return { ok: true, value: output.raw };
  }
  output.object("a string, an array of content items or {content, success}");
  const content = output.field("content").string();
  const success = output.field("success").optional()?.boolean();
  return { ok: success !== false, value: content };
}
