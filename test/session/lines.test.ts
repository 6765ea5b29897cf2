/**
 * Remembered lines (core/session/lines.ts): a stored message's token estimate is kept with its
 * line and equals `estimateTokens`.
 */
import { describe, expect, test } from "vitest";
import { estimateTokens, type MessageRecord } from "../../core/mod.ts";
import { rememberLine, storedTokens } from "../../core/session/lines.ts";

const encoder = new TextEncoder();
describe("storedTokens", () => {
  const message = (sequence: number, text: string): MessageRecord => ({
    record_type: "message",
    sequence,
    message_id: `m${sequence}`,
    role: "user",
    created_at: "2026-12-02T13:00:00.000Z",
    parts: [{ sequence: 1, type: "text", text }],
  });

  test("is estimateTokens, for messages with a remembered line and without", () => {
    const stored = [message(1, "hi"), message(2, 'a longer text with "quotes" and ünïcode')];
    for (const record of stored) rememberLine(record, encoder.encode(JSON.stringify(record)));
    const fresh = message(3, "not committed");
    expect(storedTokens(stored)).toBe(estimateTokens(stored));
    expect(storedTokens([...stored, fresh])).toBe(estimateTokens([...stored, fresh]));
    // Kept with the line: asked again, the same figure.
    expect(storedTokens(stored)).toBe(estimateTokens(stored));
    expect(storedTokens([])).toBe(0);
  });
});
