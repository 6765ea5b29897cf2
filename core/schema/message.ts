import { z } from "zod";
import { Count, Sequence, Timestamp } from "./common.ts";

/** Plain text the model or the user wrote. */
export const TextPart = z.looseObject({ sequence: Sequence, type: z.literal("text"), text: z.string() });
/** Raw reasoning as streamed by the provider. */
export const ReasoningPart = z.looseObject({ sequence: Sequence, type: z.literal("reasoning"), text: z.string() });
/** A provider-produced summary of reasoning. */
export const ReasoningSummaryPart = z.looseObject({
  sequence: Sequence,
  type: z.literal("reasoning-summary"),
  text: z.string(),
});

/** The lifecycle of a tool call inside the assistant message that made it. */
export const ToolState = z.enum(["input-available", "output-available", "output-error"]);

/** A tool call and, once known, its result. */
export const ToolPart = z.looseObject({
  sequence: Sequence,
  type: z.literal("tool"),
  tool_call_id: z.string().min(1),
  tool_name: z.string().min(1),
  state: ToolState,
  input: z.unknown(),
  output: z.unknown().optional(),
  error: z.string().optional(),
});

/** A file: inline base64 `data` or a `url`. */
export const FilePart = z
  .looseObject({
    sequence: Sequence,
    type: z.literal("file"),
    media_type: z.string().min(1),
    name: z.string().optional(),
    data: z.string().optional(),
    url: z.string().optional(),
  })
  .refine((part) => part.data !== undefined || part.url !== undefined, { message: "a file part needs data or url" });

/** Opaque provider-native context, tagged with the exact identity that produced it. */
export const ProviderContextPart = z.looseObject({
  sequence: Sequence,
  type: z.literal("provider-context"),
  provider: z.string().min(1),
  api: z.string().min(1),
  model: z.string().min(1),
  data: z.unknown(),
});

/** Any part of a message. An unknown part type is an invalid record (see docs/decisions.md). */
export const MessagePart = z.discriminatedUnion("type", [
  TextPart,
  ReasoningPart,
  ReasoningSummaryPart,
  ToolPart,
  FilePart,
  ProviderContextPart,
]);

/** The provider's real usage for the step that produced a message. */
export const Usage = z.looseObject({
  input_tokens: Count,
  output_tokens: Count,
  total_tokens: Count.optional(),
  cost_usd_micros: Count.optional(),
});

/** The provider / API / model identity that produced a message or a context block. */
export const ProviderIdentity = z.looseObject({
  provider: z.string().min(1),
  api: z.string().min(1),
  model: z.string().min(1),
});

/** Status of an assistant message; `streaming` exists only in the draft file. */
export const MessageStatus = z.enum(["completed", "stopped", "failed", "streaming"]);

const messageShape = {
  record_type: z.literal("message"),
  sequence: Sequence,
  message_id: z.string().min(1),
  role: z.enum(["user", "assistant"]),
  created_at: Timestamp,
  status: MessageStatus.optional(),
  parts: z.array(MessagePart),
  usage: Usage.optional(),
  provider: ProviderIdentity.optional(),
};

function uniquePartSequences(parts: readonly { sequence: number }[]): boolean {
  return new Set(parts.map((part) => part.sequence)).size === parts.length;
}

/** A committed message: one line of `active.jsonl` or of a segment. */
export const MessageRecord = z
  .looseObject(messageShape)
  .refine((m) => m.status !== "streaming", { message: "status \"streaming\" exists only in assistant_message.json", path: ["status"] })
  .refine((m) => uniquePartSequences(m.parts), { message: "part sequences must be unique within a message", path: ["parts"] });

/** The one streaming draft, `assistant_message.json`. */
export const DraftRecord = z
  .looseObject({ ...messageShape, role: z.literal("assistant"), status: z.literal("streaming") })
  .refine((m) => uniquePartSequences(m.parts), { message: "part sequences must be unique within a message", path: ["parts"] });

/** The parsed shape of {@linkcode TextPart}. */
export type TextPart = z.infer<typeof TextPart>;
/** The parsed shape of {@linkcode ReasoningPart}. */
export type ReasoningPart = z.infer<typeof ReasoningPart>;
/** The parsed shape of {@linkcode ReasoningSummaryPart}. */
export type ReasoningSummaryPart = z.infer<typeof ReasoningSummaryPart>;
/** The parsed shape of {@linkcode ToolState}. */
export type ToolState = z.infer<typeof ToolState>;
/** The parsed shape of {@linkcode ToolPart}. */
export type ToolPart = z.infer<typeof ToolPart>;
/** The parsed shape of {@linkcode FilePart}. */
export type FilePart = z.infer<typeof FilePart>;
/** The parsed shape of {@linkcode ProviderContextPart}. */
export type ProviderContextPart = z.infer<typeof ProviderContextPart>;
/** The parsed shape of {@linkcode MessagePart}. */
export type MessagePart = z.infer<typeof MessagePart>;
/** The parsed shape of {@linkcode Usage}. */
export type Usage = z.infer<typeof Usage>;
/** The parsed shape of {@linkcode ProviderIdentity}. */
export type ProviderIdentity = z.infer<typeof ProviderIdentity>;
/** The parsed shape of {@linkcode MessageStatus}. */
export type MessageStatus = z.infer<typeof MessageStatus>;
/** The parsed shape of {@linkcode MessageRecord}. */
export type MessageRecord = z.infer<typeof MessageRecord>;
/** The parsed shape of {@linkcode DraftRecord}. */
export type DraftRecord = z.infer<typeof DraftRecord>;
