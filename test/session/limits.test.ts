/**
 * The write limits are the read limits (docs/FORMAT.md "Limits"; issue 27): nothing is
 * acknowledged that an open cannot read back. A message whose line is over 64 MiB, a commit
 * that would grow `active.jsonl` past the backend's file limit, an import whose files would
 * be over either, and a value nested past 512 levels are each refused with a typed
 * `LimitExceededError` naming the limit, before anything is written; the session stays
 * readable and writable.
 *
 * The line limit is tested at its real size (one 65 MiB message). The file limit, lowered
 * through a backend's `maxFileBytes` option and at its real size, is in
 * test/node/limits.test.ts (this folder also runs on PostgreSQL, whose limits are its own).
 */
import { describe, expect, it } from "vitest";
import { ScriptedProvider } from "../../testing/mod.ts";
import { LimitExceededError, MAX_JSON_DEPTH, MAX_LINE_BYTES, MemoryStorage, type PortableSession, type Provider, Sessions } from "../../core/mod.ts";

const REF = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

/** A tool input nested `depth` levels (the part and the message add two more). */
function deepInput(depth: number): unknown {
  let value: unknown = "leaf";
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

describe("append refuses a message an open could not read back", () => {
  it("a message whose line is over MAX_LINE_BYTES (real size, 65 MiB): LimitExceededError, nothing written, the session stays writable", async () => {
    const storage = new MemoryStorage();
    const sessions = new Sessions({ storage });
    const session = await sessions.create(REF);
    await session.append({ role: "user", parts: [{ type: "text", text: "before" }] });
    const error = await rejection(session.append({ role: "user", parts: [{ type: "text", text: "x".repeat(MAX_LINE_BYTES + 1024 * 1024) }] }));
    expect(error).toBeInstanceOf(LimitExceededError);
    expect((error as LimitExceededError).details).toMatchObject({ limit: "MAX_LINE_BYTES", max: MAX_LINE_BYTES, file: "messages/active.jsonl" });
    expect((error as Error).message).toMatch(
      /message 1 of 1 in this commit \(sequence 2\) would be a line of 65 MiB, over the line limit of 64 MiB \(MAX_LINE_BYTES\)/,
    );
    const reopened = await new Sessions({ storage }).open(REF);
    expect(reopened.diagnostics).toEqual([]);
    expect(reopened.active.map((m) => m.sequence)).toEqual([1]);
    expect((await reopened.append({ role: "user", parts: [{ type: "text", text: "after" }] })).sequences).toEqual([2]);
  }, 60_000);

  it("a run whose reply grows past MAX_LINE_BYTES fails typed, and the session stays writable (real size)", async () => {
    const storage = new MemoryStorage();
    const session = await new Sessions({ storage }).create(REF);
    const chunk = "r".repeat(1 << 20);
    const provider: Provider = {
      identity: { provider: "long", api: "test", model: "m" },
      async *stream() {
        for (let i = 0; i < 66; i++) yield { type: "text-delta", text: chunk };
      },
    };
    const error = await rejection(session.run("go", { provider }).result);
    expect(error).toBeInstanceOf(LimitExceededError);
    const reopened = await new Sessions({ storage }).open(REF);
    expect(reopened.diagnostics.filter((d) => d.fatal)).toEqual([]);
    const { sequences } = await reopened.append({ role: "user", parts: [{ type: "text", text: "still writable" }] });
    const all = (await new Sessions({ storage }).open(REF)).active;
    expect(all.at(-1)?.sequence).toBe(sequences[0]);
    // The user's input, held in the draft, was committed with what the draft held of the reply.
    expect(all[0]).toMatchObject({ sequence: 1, role: "user", parts: [expect.objectContaining({ text: "go" })] });
    for (const message of all) expect(JSON.stringify(message).length).toBeLessThanOrEqual(MAX_LINE_BYTES);
  }, 120_000);

  it("a batch names the message that is over the line limit", async () => {
    const storage = new MemoryStorage();
    const session = await new Sessions({ storage }).create(REF);
    const error = await rejection(
      session.append([
        { role: "user", parts: [{ type: "text", text: "small" }] },
        { role: "assistant", parts: [{ type: "text", text: "z".repeat(MAX_LINE_BYTES) }] },
      ]),
    );
    expect((error as Error).message).toMatch(/message 2 of 2 in this commit \(sequence 2\)/);
    expect((await new Sessions({ storage }).open(REF)).active).toEqual([]);
  }, 60_000);
});

describe("nesting past MAX_JSON_DEPTH is a typed refusal, never a stack overflow", () => {
  it.each([6_000, 100_000])("append of a message nested %i deep throws LimitExceededError (not RangeError)", async (depth) => {
    const storage = new MemoryStorage();
    const session = await new Sessions({ storage }).create(REF);
    const error = await rejection(
      session.append({ role: "assistant", parts: [{ type: "tool", tool_call_id: "c1", tool_name: "t", state: "input-available", input: deepInput(depth) }] }),
    );
    expect(error).toBeInstanceOf(LimitExceededError);
    expect((error as LimitExceededError).details).toMatchObject({ limit: "MAX_JSON_DEPTH", max: MAX_JSON_DEPTH });
    expect((error as Error).message).toMatch(/^messages\[0\]: nested deeper than 512 levels/);
  });

  it("a run whose provider streams a tool call nested 100,000 deep fails with LimitExceededError; the session reopens clean", async () => {
    const storage = new MemoryStorage();
    const session = await new Sessions({ storage }).create(REF);
    // A provider of its own: the scripted one measures its inputs with JSON.stringify itself.
    const provider: Provider = {
      identity: { provider: "deep", api: "test", model: "m" },
      async *stream() {
        yield { type: "tool-call", toolCallId: "c1", toolName: "t", input: deepInput(100_000) };
      },
    };
    const error = await rejection(session.run("go", { provider, tools: [{ name: "t", description: "t", inputSchema: {}, execute: async () => "ok" }] }).result);
    expect(error).toBeInstanceOf(LimitExceededError);
    expect((error as Error).message).toMatch(/the input of tool call c1: nested deeper than 512 levels/);
    const reopened = await new Sessions({ storage }).open(REF);
    expect(reopened.diagnostics.filter((d) => d.fatal)).toEqual([]);
  });

  it("a tool whose output is nested 100,000 deep is a tool error naming the limit, and the run goes on", async () => {
    const storage = new MemoryStorage();
    const session = await new Sessions({ storage }).create(REF);
    const provider = new ScriptedProvider([{ text: "calling", toolCalls: [{ id: "c1", name: "t", input: {} }] }, { text: "done" }]);
    const run = session.run("go", { provider, tools: [{ name: "t", description: "t", inputSchema: {}, execute: async () => deepInput(100_000) }] });
    await run.result;
    const tool = session.active.flatMap((m) => m.parts).find((p) => p.type === "tool");
    expect(tool).toMatchObject({ state: "output-error", error: expect.stringMatching(/the output of tool t: nested deeper than 512 levels/) });
  });

  it("a message within the limit is committed and read back", async () => {
    const storage = new MemoryStorage();
    const session = await new Sessions({ storage }).create(REF);
    await session.append({
      role: "assistant",
      parts: [{ type: "tool", tool_call_id: "c1", tool_name: "t", state: "input-available", input: deepInput(MAX_JSON_DEPTH - 4) }],
    });
    const reopened = await new Sessions({ storage }).open(REF);
    expect(reopened.diagnostics).toEqual([]);
    expect(reopened.active).toHaveLength(1);
  });

  it("a 100,000-level line in active.jsonl is a fatal invalid_record at its line, not a crash", async () => {
    const storage = new MemoryStorage();
    const session = await new Sessions({ storage }).create(REF);
    await session.append({ role: "user", parts: [{ type: "text", text: "one" }] });
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    await storage.append(
      "agents/a1/workspaces/w1/sessions/s1/messages/active.jsonl",
      new TextEncoder().encode(`{"record_type":"message","sequence":2,"deep":${deep}}\n`),
    );
    const reopened = await new Sessions({ storage }).open(REF);
    expect(reopened.diagnostics).toEqual([expect.objectContaining({ file: "messages/active.jsonl", line: 2, code: "invalid_record", fatal: true })]);
    expect(reopened.diagnostics[0]!.message).toMatch(/nested deeper than 512 levels/);
  });
});

describe("importPortable refuses what an open could not read back; nothing is created", () => {
  it("a message nested past the limit", async () => {
    const storage = new MemoryStorage();
    const deep = { messages: [{ role: "user", parts: [{ sequence: 1, type: "text", text: "x", extra: deepInput(100_000) }] }] } as unknown as PortableSession;
    const error = await rejection(new Sessions({ storage }).importPortable(REF, deep));
    expect(error).toBeInstanceOf(LimitExceededError);
    expect((error as Error).message).toMatch(/^imported message 1: nested deeper than 512 levels/);
  });

  it("a message whose line is over MAX_LINE_BYTES (real size)", async () => {
    const storage = new MemoryStorage();
    const big = {
      messages: [{
        record_type: "message",
        sequence: 1,
        message_id: "m1",
        created_at: "2026-12-02T13:00:00.000Z",
        role: "user",
        parts: [{ sequence: 1, type: "text", text: "x".repeat(MAX_LINE_BYTES) }],
      }],
    } as unknown as PortableSession;
    const error = await rejection(new Sessions({ storage }).importPortable(REF, big));
    expect(error).toBeInstanceOf(LimitExceededError);
    expect((error as Error).message).toMatch(/^messages\/active\.jsonl: imported message 1 would be a line of 64 MiB, over the line limit/);
    expect(await storage.list("agents/a1/workspaces/w1/sessions")).toEqual([]);
  }, 60_000);
});
