/**
 * What a run's provider reads: foreign provider context left out (and reported), an
 * interrupted tool call closed, and only the newest summary + Active read from storage
 * however long the history is.
 */
import { describe, expect, it } from "vitest";
import { INTERRUPTED_TOOL_CALL_ERROR, MemoryStorage, type ProviderIdentity } from "../../core/mod.ts";
import { ScriptedProvider } from "../../testing/mod.ts";
import {
  footer,
  lines,
  metaFields,
  metaOnDisk,
  metaText,
  millisecondClock,
  msg,
  P,
  RecordingStorage,
  REF,
  registry,
  segmentName,
  utf8,
} from "../support/session.ts";
import { activeOnDisk, createSession, drain, shape } from "./support.ts";
import { NEWEST_SEGMENT_FIELD } from "../../core/internal.ts";

const SCRIPTED: ProviderIdentity = { provider: "scripted", api: "test", model: "scripted-1" };
const OPENAI: ProviderIdentity = { provider: "openai", api: "responses", model: "gpt-5" };

describe("provider context of another identity", () => {
  it("is left out of the provider's input, reported as context-omitted, and kept in stored history", async () => {
    const storage = new MemoryStorage();
    const { session } = await createSession(storage);
    await session.append([
      { role: "user", parts: [{ type: "text", text: "first" }] },
      {
        role: "assistant",
        provider: OPENAI,
        parts: [
          { type: "text", text: "answer from openai" },
          { type: "provider-context", ...OPENAI, data: { encrypted: "opaque-openai" } },
          { type: "provider-context", ...SCRIPTED, data: { mine: true } },
          { type: "provider-context", ...SCRIPTED, model: "scripted-2", data: { other_model: true } },
        ],
      },
      { role: "assistant", provider: OPENAI, parts: [{ type: "provider-context", ...OPENAI, data: "only context" }] },
    ]);
    const stored = await activeOnDisk(storage);
    const provider = new ScriptedProvider([{ toolCalls: [{ id: "c1", name: "noop", input: {} }] }, { text: "ok" }]);
    const { events } = await drain(session.run("second", { provider, tools: [{ name: "noop", execute: () => null }] }));

    const omitted = [
      { sequence: 2, partSequence: 2, ...OPENAI },
      { sequence: 2, partSequence: 4, ...SCRIPTED, model: "scripted-2" },
      { sequence: 3, partSequence: 1, ...OPENAI },
    ];
    expect(events.filter((e) => e.type === "context-omitted")).toEqual([
      { type: "context-omitted", omitted, portableFallbacks: [] },
      { type: "context-omitted", omitted, portableFallbacks: [] },
    ]);
    expect(shape(events).slice(0, 2)).toEqual(["step-started", "context-omitted"]);
    for (const request of provider.requests) {
      // Message 3 held nothing but foreign context: it is dropped from the input.
      expect(request.messages.slice(0, 2).map((m) => m.sequence)).toEqual([1, 2]);
      expect(request.messages[2]!.sequence).toBe(4);
      expect(request.messages[1]!.parts).toEqual([
        { sequence: 1, type: "text", text: "answer from openai" },
        { sequence: 3, type: "provider-context", ...SCRIPTED, data: { mine: true } },
      ]);
      expect(JSON.stringify(request)).not.toContain("opaque-openai");
      expect(JSON.stringify(request)).not.toContain("other_model");
    }
    // Stored history is untouched: the same lines, then the run's commit.
    const after = await activeOnDisk(storage);
    expect(after.slice(0, 3)).toEqual(stored);
    expect(JSON.stringify(after)).toContain("opaque-openai");
    expect(session.active[1]!.parts).toHaveLength(4);
  });

  it("reports the messages sent as their portable fallback text (imported from Rho) in context-omitted", async () => {
    const { session } = await createSession(new MemoryStorage());
    await session.append([
      { role: "user", parts: [{ type: "text", text: "q" }] },
      {
        role: "assistant",
        provider: OPENAI,
        status: "completed",
        parts: [
          { type: "text", text: "done" },
          { type: "provider-context", ...OPENAI, data: { encrypted: "opaque" } },
        ],
        rho: { portable_fallback: "the gist of it" },
      },
    ]);
    const provider = ScriptedProvider.replies("ok");
    const { events } = await drain(session.run("q2", { provider }));
    expect(events.filter((e) => e.type === "context-omitted")).toEqual([
      { type: "context-omitted", omitted: [{ sequence: 2, partSequence: 2, ...OPENAI }], portableFallbacks: [2] },
    ]);
    expect(provider.requests[0]!.messages[1]!.parts.at(-1)).toMatchObject({ type: "text", text: "the gist of it" });
  });

  it("the same identity gets all its context and no context-omitted event", async () => {
    const { session } = await createSession(new MemoryStorage());
    await session.append([
      { role: "user", parts: [{ type: "text", text: "q" }] },
      { role: "assistant", provider: SCRIPTED, parts: [{ type: "provider-context", ...SCRIPTED, data: { cache: 1 } }] },
    ]);
    const provider = ScriptedProvider.replies("ok");
    const { events } = await drain(session.run("q2", { provider }));
    expect(events.some((e) => e.type === "context-omitted")).toBe(false);
    expect(provider.requests[0]!.messages[1]!.parts).toEqual([{ sequence: 1, type: "provider-context", ...SCRIPTED, data: { cache: 1 } }]);
  });
});

describe("an interrupted tool part in history", () => {
  it("reaches the provider closed as output-error; the stored part stays input-available", async () => {
    const storage = new MemoryStorage();
    const { session } = await createSession(storage);
    await session.append([
      { role: "user", parts: [{ type: "text", text: "read it" }] },
      {
        role: "assistant",
        status: "stopped",
        parts: [
          { type: "text", text: "reading" },
          { type: "tool", tool_call_id: "c9", tool_name: "read", state: "input-available", input: { path: "x" } },
        ],
      },
    ]);
    const provider = ScriptedProvider.replies("sorry, again");
    await session.run("and now?", { provider }).result;
    expect(provider.requests[0]!.messages[1]!.status).toBe("stopped");
    expect(provider.requests[0]!.messages[1]!.parts[1]).toEqual({
      sequence: 2,
      type: "tool",
      tool_call_id: "c9",
      tool_name: "read",
      state: "output-error",
      input: { path: "x" },
      error: INTERRUPTED_TOOL_CALL_ERROR,
    });
    expect((await activeOnDisk(storage))[1]!["parts"]).toEqual([
      { sequence: 1, type: "text", text: "reading" },
      { sequence: 2, type: "tool", tool_call_id: "c9", tool_name: "read", state: "input-available", input: { path: "x" } },
    ]);
  });

  it("a run cancelled during a tool leaves a part the next run sends closed", async () => {
    const { session } = await createSession(new MemoryStorage());
    const controller = new AbortController();
    const tools = [
      {
        name: "wait",
        execute: (_input: unknown, { signal }: { signal: AbortSignal }) =>
          new Promise((resolve) => {
            controller.abort();
            signal.addEventListener("abort", () => resolve("late"));
            if (signal.aborted) resolve("late");
          }),
      },
    ];
    await session.run("go", { provider: new ScriptedProvider([{ toolCalls: [{ id: "w1", name: "wait", input: {} }] }]), tools, signal: controller.signal })
      .result.catch(() => undefined);
    expect(session.active[1]!.parts[0]).toMatchObject({ state: "input-available" });
    const provider = ScriptedProvider.replies("ok");
    await session.run("next", { provider }).result;
    expect(provider.requests[0]!.messages[1]!.parts[0]).toMatchObject({ state: "output-error", error: INTERRUPTED_TOOL_CALL_ERROR });
  });
});

describe("bounded reads for a normal step", () => {
  // Written by hand per docs/FORMAT.md, meta.json has no hint and an open lists segments/ (names only);
  // written by sessionfold, it names the newest segment and nothing lists segments/ at all.
  it.each([
    { writer: "a hand-written session (docs/FORMAT.md only)", hint: false },
    { writer: "a session whose meta.json names its newest segment", hint: true },
  ])("$writer with 1,000 segments: open + one turn reads meta, Active, draft, instruction, the newest segment's tail, meta again", async ({ hint }) => {
    const storage = new MemoryStorage();
    const SEGMENTS = 1000;
    let historyBytes = 0;
    let newest = "";
    for (let i = 0; i < SEGMENTS; i++) {
      const start = i * 3 + 1;
      const end = start + 2;
      const text = lines([msg(start), msg(start + 1), msg(start + 2), footer(end, `cumulative summary through ${end}`)]);
      newest = `${P.segmentsDir}/${segmentName(start, end)}`;
      await storage.replace(newest, utf8(text));
      historyBytes += utf8(text).length;
    }
    const last = SEGMENTS * 3;
    const activeText = lines([msg(last + 1), msg(last + 2)]);
    await storage.replace(P.active, utf8(activeText));
    historyBytes += utf8(activeText).length;
    await storage.replace(P.instruction, utf8("You are the long-history agent."));
    await storage.replace(
      P.meta,
      utf8(
        metaText(
          metaFields(
            {
              message_count: last + 2,
              history_bytes: historyBytes,
              revision: 1234,
              ...(hint ? { [NEWEST_SEGMENT_FIELD]: { start: last - 2, end: last } } : {}),
            },
            REF,
            null,
          ),
        ),
      ),
    );

    const recording = new RecordingStorage(storage);
    const session = await registry(recording, undefined, millisecondClock()).open(REF);
    expect(session.diagnostics).toEqual([]);
    const provider = ScriptedProvider.replies("short answer");
    const outcome = await session.run("new question", { provider }).result;
    expect(outcome.revision).toBe(1235);
    expect(outcome.messages.map((m) => m.sequence)).toEqual([last + 3, last + 4]);
    expect(provider.requests[0]!.summary).toBe(`cumulative summary through ${last}`);
    expect(provider.requests[0]!.system).toBe("You are the long-history agent.");
    expect(provider.requests[0]!.messages.map((m) => m.sequence)).toEqual([last + 1, last + 2, last + 3]);

    const reads = recording.calls.filter((c) => c.op === "read" || c.op === "readTail" || c.op === "list").map((c) => `${c.op} ${c.path}`);
    // meta.json's read is also the session's existence check: no point read of it first.
    expect(reads).toEqual([
      `read ${P.meta}`,
      `read ${P.active}`,
      `read ${P.draft}`,
      `read ${P.instruction}`,
      ...(hint ? [] : [`list ${P.segmentsDir}`]),
      `readTail ${newest}`,
      `read ${P.meta}`,
      `readTail ${P.lock}`, // the release's check that the lock is still this writer's (core/storage/fence.ts)
    ]);
    expect(recording.calls.filter((c) => c.path.startsWith(`${P.segmentsDir}/`)).map((c) => `${c.op} ${c.path}`)).toEqual([`readTail ${newest}`]);
    const writes = recording.calls.filter((c) => !["read", "readTail", "list"].includes(c.op)).map((c) => `${c.op} ${c.path}`);
    expect(writes).toEqual([
      `createExclusive ${P.lock}`,
      `replace ${P.draft}`,
      `append ${P.active}`,
      `replace ${P.meta}`,
      `remove ${P.draft}`,
      `remove ${P.lock}`,
    ]);
    // The appended batch continues the sequence after every segment.
    const appended = new TextDecoder().decode(recording.calls.find((c) => c.op === "append")!.bytes);
    expect(appended.split("\n").filter(Boolean).map((l) => (JSON.parse(l) as { sequence: number }).sequence)).toEqual([last + 3, last + 4]);
    // The full list is there when asked for, and meta.json now names the newest segment.
    expect(await session.segments()).toHaveLength(SEGMENTS);
    expect((await metaOnDisk(storage))[NEWEST_SEGMENT_FIELD]).toEqual({ start: last - 2, end: last });
  });
});
