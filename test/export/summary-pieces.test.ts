/**
 * `prepareExport` with `redact`: a summary holds a session's secrets the way summarizers write
 * them (issue 27): split by the space that joins a message's parts, and cut short at a line
 * limit, where no detector knows them. Every piece of at least 8 characters of a secret found
 * in the messages is replaced by that secret's placeholder; nothing is redacted without `redact`.
 */
import { describe, expect, it } from "vitest";
import { type PortableSession, prepareExport } from "../../core/mod.ts";

const TOKEN = "ghp_Q7wErTy9UiOp3AsDfGhJkL1zXcVbNm0Qw2Er";
const AWS = "AKIAZ7Q4M2X9R5T8W3YB";

function session(summary: string, secret = TOKEN): PortableSession {
  return {
    messages: [
      {
        record_type: "message",
        sequence: 1,
        message_id: "m1",
        role: "user",
        created_at: "2026-12-02T13:00:00.000Z",
        parts: [
          { sequence: 1, type: "text", text: `use ${secret.slice(0, secret.length / 2)}` },
          { sequence: 2, type: "text", text: `${secret.slice(secret.length / 2)} now` },
        ],
      },
    ],
    segments: [{ through: 1, summary }],
    summary,
  } as unknown as PortableSession;
}

describe("summaries lose every piece of a secret found in the messages", () => {
  it.each([
    ["split by a space", AWS, `#1 user: use ${AWS.slice(0, 10)} ${AWS.slice(10)} now`],
    ["cut at a limit", TOKEN, `#1 user: use ${TOKEN.slice(0, 19)}…`],
    ["cut at a limit (an AWS key in a tool input)", AWS, `#1 tool env({"note":"set the aws credentials for ci!","id":"${AWS.slice(0, 12)}…) → ok`],
    ["cut and split", AWS, `#1 user: use ${AWS.slice(0, 10)} ${AWS.slice(10, 14)}…`],
    ["trimmed at the front", AWS, `${AWS.slice(9)} now\n#2 user: fine`],
  ])("%s", (_name, secret, summary) => {
    const { session: out, report } = prepareExport(session(summary, secret), { redact: true });
    for (const text of [out.summary!, out.segments![0]!.summary]) {
      expect(text).toMatch(/\[REDACTED:[a-z-]+#\d+\]/);
      // No 8 characters of the secret in a row, whitespace ignored.
      const squeezed = text.replace(/\s+/g, "");
      for (let start = 0; start + 8 <= secret.length; start++) expect(squeezed).not.toContain(secret.slice(start, start + 8));
    }
    expect(report.byField.segment_summary).toBeGreaterThan(0);
  });

  it("a piece shorter than 8 characters and text that is no secret stay; without redact nothing changes", () => {
    const summary = "#1 user: use ghp_Q7w… and ghp_ plain words";
    expect(prepareExport(session(summary), { redact: true }).session.summary).toBe(summary);
    expect(prepareExport(session(`${TOKEN.slice(0, 19)}…`), {}).session.summary).toBe(`${TOKEN.slice(0, 19)}…`);
  });
});
