import type { MessagePart, MessageRecord, ToolPart } from "../schema/message.ts";

/**
 * A tool part a reader fills in place: its call is read first and its result joined to it
 * later, so the readers need it writable while they build a session.
 */
export type MutableToolPart = { -readonly [K in keyof ToolPart]: ToolPart[K] };

/** A message a reader is still building: fields and parts writable until the record is done. */
export type MutableMessage = { -readonly [K in keyof MessageRecord]: MessageRecord[K] } & { parts: MessagePart[] };
