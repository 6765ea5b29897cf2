/**
 * toMessageRecord (core/session/message-input.ts) builds the record in the schema's field
 * order so the hand-written check can take it without zod: whatever path it takes, the record
 * (and so the committed line) must be exactly what the schema returns for the message, and a
 * message the schema refuses must still be refused, naming the field.
 */
import { describe, expect, test } from "vitest";
import { InvalidInputError, MessageRecord } from "../../core/mod.ts";
import { type NewMessage, toMessageRecord } from "../../core/session/message-input.ts";

const clock = () => Date.UTC(2026, 11, 4, 12, 0, 0);

/** What the schema returns for `message` with what a commit fills in: the record before this change, field for field. */
function bySchema(message: NewMessage, record: MessageRecord): unknown {
  const parts = message.parts.map((part, i) => ({ ...part, sequence: part.sequence ?? i + 1 }));
  return MessageRecord.parse({
    ...message,
    record_type: "message",
    sequence: 1,
    message_id: record.message_id,
    created_at: record.created_at,
    ...(message.role === "assistant" && message.status === undefined ? { status: "completed" } : {}),
    parts,
  });
}

const MESSAGES: Record<string, NewMessage> = {
  user: { role: "user", parts: [{ type: "text", text: "hi" }] },
  "assistant with usage and provider": {
    role: "assistant",
    parts: [{ type: "text", text: "a" }, { type: "reasoning", text: "r" }],
    usage: { input_tokens: 3, output_tokens: 1 },
    provider: { provider: "openai", api: "responses", model: "gpt-5" },
  },
  "fields in another order, an id and a time given": {
    provider: { provider: "openai", api: "responses", model: "gpt-5" },
    usage: { output_tokens: 1, input_tokens: 3 },
    created_at: "2026-01-01T00:00:00.000Z",
    message_id: "m_given",
    parts: [{ text: "b", type: "text", sequence: 4 }],
    role: "assistant",
    status: "stopped",
  },
  "a tool part with its fields in another order": {
    role: "assistant",
    parts: [{ output: { ok: true }, state: "output-available", tool_name: "t", tool_call_id: "c1", type: "tool", input: { q: 1 } }],
  },
  "extra fields, and a record_type and sequence the commit overrides": {
    role: "user",
    parts: [{ type: "text", text: "x" }],
    custom: { nested: [1, 2] },
    record_type: "other",
    sequence: 99,
  } as NewMessage,
};

describe("toMessageRecord", () => {
  for (const [name, message] of Object.entries(MESSAGES)) {
    test(`gives the schema's record, fields in its order: ${name}`, () => {
      const record = toMessageRecord(message, clock);
      expect(JSON.stringify(record)).toBe(JSON.stringify(bySchema(message, record)));
    });
  }

  test("refuses what the schema refuses, naming the field", () => {
    expect(() => toMessageRecord({ role: "user", parts: [{ type: "text", text: 5 }] } as unknown as NewMessage, clock)).toThrow(InvalidInputError);
    expect(() => toMessageRecord({ role: "user", parts: [{ type: "text", text: 5 }] } as unknown as NewMessage, clock)).toThrow(/message\.parts\.0\.text/);
    expect(() => toMessageRecord({ role: "system", parts: [] } as unknown as NewMessage, clock)).toThrow(/message\.role/);
    expect(() => toMessageRecord({ role: "user", status: "streaming", parts: [] } as unknown as NewMessage, clock)).toThrow(/message\.status/);
  });

  test("refuses a null status, parts that are not a list and a part that is not an object with a typed error, never a TypeError", () => {
    const refused = (message: unknown, field: RegExp) => {
      expect(() => toMessageRecord(message as NewMessage, clock)).toThrow(InvalidInputError);
      expect(() => toMessageRecord(message as NewMessage, clock)).toThrow(field);
    };
    refused({ role: "assistant", status: null, parts: [] }, /message\.status/);
    refused({ role: "user", parts: "hi" }, /message\.parts/);
    refused({ role: "user", parts: [null] }, /message\.parts\.0/);
    refused({ role: "user", parts: [{ type: "text", text: "a" }, 7] }, /message\.parts\.1/);
  });

  test("a field named __proto__ stays a field of the record (it never becomes its prototype)", () => {
    const message = JSON.parse('{"role":"user","parts":[{"type":"text","text":"x","__proto__":{"p":1}}],"__proto__":{"polluted":true}}') as NewMessage;
    const record = toMessageRecord(message, clock);
    expect(Object.getPrototypeOf(record)).toBe(Object.prototype);
    expect(Object.getPrototypeOf(record.parts[0])).toBe(Object.prototype);
    expect(JSON.stringify(record)).toBe(JSON.stringify(bySchema(message, record)));
  });
});
