import * as z from "zod";
import { Count, Sequence, Timestamp } from "./common.ts";

/** The zod shape of a part whose payload is one `text` string. */
type TextLikeShape<T extends string> = { sequence: z.ZodInt; type: z.ZodLiteral<T>; text: z.ZodString };

/** Plain text the model or the user wrote. */
export const TextPart: z.ZodObject<TextLikeShape<"text">, z.core.$loose> = z.looseObject({ sequence: Sequence, type: z.literal("text"), text: z.string() });
/** Raw reasoning as streamed by the provider. */
export const ReasoningPart: z.ZodObject<TextLikeShape<"reasoning">, z.core.$loose> = z.looseObject({
  sequence: Sequence,
  type: z.literal("reasoning"),
  text: z.string(),
});
/** A provider-produced summary of reasoning. */
export const ReasoningSummaryPart: z.ZodObject<TextLikeShape<"reasoning-summary">, z.core.$loose> = z.looseObject({
  sequence: Sequence,
  type: z.literal("reasoning-summary"),
  text: z.string(),
});

/** The lifecycle of a tool call inside the assistant message that made it. */
export const ToolState: z.ZodEnum<{ "input-available": "input-available"; "output-available": "output-available"; "output-error": "output-error" }> = z.enum([
  "input-available",
  "output-available",
  "output-error",
]);

/** A tool call and, once known, its result. */
export const ToolPart: z.ZodObject<
  {
    sequence: z.ZodInt;
    type: z.ZodLiteral<"tool">;
    tool_call_id: z.ZodString;
    tool_name: z.ZodString;
    state: typeof ToolState;
    input: z.ZodUnknown;
    output: z.ZodOptional<z.ZodUnknown>;
    error: z.ZodOptional<z.ZodString>;
  },
  z.core.$loose
> = z.looseObject({
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
export const FilePart: z.ZodObject<
  {
    sequence: z.ZodInt;
    type: z.ZodLiteral<"file">;
    media_type: z.ZodString;
    name: z.ZodOptional<z.ZodString>;
    data: z.ZodOptional<z.ZodString>;
    url: z.ZodOptional<z.ZodString>;
  },
  z.core.$loose
> = z
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
export const ProviderContextPart: z.ZodObject<
  { sequence: z.ZodInt; type: z.ZodLiteral<"provider-context">; provider: z.ZodString; api: z.ZodString; model: z.ZodString; data: z.ZodUnknown },
  z.core.$loose
> = z.looseObject({
  sequence: Sequence,
  type: z.literal("provider-context"),
  provider: z.string().min(1),
  api: z.string().min(1),
  model: z.string().min(1),
  data: z.unknown(),
});

/** Any part of a message. An unknown part type is an invalid record (see docs/decisions.md). */
export const MessagePart: z.ZodDiscriminatedUnion<
  [typeof TextPart, typeof ReasoningPart, typeof ReasoningSummaryPart, typeof ToolPart, typeof FilePart, typeof ProviderContextPart],
  "type"
> = z.discriminatedUnion("type", [
  TextPart,
  ReasoningPart,
  ReasoningSummaryPart,
  ToolPart,
  FilePart,
  ProviderContextPart,
]);

/** The provider's real usage for the step that produced a message. */
export const Usage: z.ZodObject<
  { input_tokens: z.ZodInt; output_tokens: z.ZodInt; total_tokens: z.ZodOptional<z.ZodInt>; cost_usd_micros: z.ZodOptional<z.ZodInt> },
  z.core.$loose
> = z.looseObject({
  input_tokens: Count,
  output_tokens: Count,
  total_tokens: Count.optional(),
  cost_usd_micros: Count.optional(),
});

/** The provider / API / model identity that produced a message or a context block. */
export const ProviderIdentity: z.ZodObject<{ provider: z.ZodString; api: z.ZodString; model: z.ZodString }, z.core.$loose> = z.looseObject({
  provider: z.string().min(1),
  api: z.string().min(1),
  model: z.string().min(1),
});

/** Status of an assistant message; `streaming` exists only in the draft file. */
export const MessageStatus: z.ZodEnum<{ completed: "completed"; stopped: "stopped"; failed: "failed"; streaming: "streaming" }> = z.enum([
  "completed",
  "stopped",
  "failed",
  "streaming",
]);

/** The zod shape shared by a committed message and the draft. */
type MessageShape = {
  record_type: z.ZodLiteral<"message">;
  sequence: z.ZodInt;
  message_id: z.ZodString;
  role: z.ZodEnum<{ user: "user"; assistant: "assistant" }>;
  created_at: z.ZodISODateTime;
  status: z.ZodOptional<typeof MessageStatus>;
  parts: z.ZodArray<typeof MessagePart>;
  usage: z.ZodOptional<typeof Usage>;
  provider: z.ZodOptional<typeof ProviderIdentity>;
};

const messageShape: MessageShape = {
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
export const MessageRecord: z.ZodObject<MessageShape, z.core.$loose> = z
  .looseObject(messageShape)
  .refine((m) => m.status !== "streaming", { message: 'status "streaming" exists only in assistant_message.json', path: ["status"] })
  .refine((m) => uniquePartSequences(m.parts), { message: "part sequences must be unique within a message", path: ["parts"] });

/** The one streaming draft, `assistant_message.json`. */
export const DraftRecord: z.ZodObject<
  Omit<MessageShape, "role" | "status"> & { role: z.ZodLiteral<"assistant">; status: z.ZodLiteral<"streaming"> },
  z.core.$loose
> = z
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
