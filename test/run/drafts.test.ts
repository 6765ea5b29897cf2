/**
 * run() and assistant_message.json: the draft exists while a reply streams, is valid per
 * docs/FORMAT.md, is written far less often than deltas arrive, never paces the stream, is
 * gone after a commit, and is what a crashed run leaves for recovery.
 */
import { describe, expect, it } from "vitest";
import { MemoryStorage, MessageRecord, parseDraftJson, type Provider, type RunEvent, type StoragePort, type WriteOptions } from "../../core/mod.ts";
import { FaultyStorage, ScriptedProvider, type ScriptedStep, SimulatedCrashError } from "../../testing/mod.ts";
import { decode, expectContiguous, fullHistory, millisecondClock, P, readText, RecordingStorage, REF, registry } from "../support/session.ts";
import { createSession, drain, forceUnlock, shape, textOf } from "./support.ts";

/** A session on `storage` with one committed exchange (sequences 1, 2; revision 1). */
async function seed(storage: StoragePort): Promise<void> {
  const { session } = await createSession(storage, {}, "Be brief.");
  await session.append([
    { role: "user", parts: [{ type: "text", text: "earlier question" }] },
    { role: "assistant", parts: [{ type: "text", text: "earlier answer" }] },
  ]);
}

const LONG = Array.from({ length: 200 }, (_, i) => String.fromCharCode(97 + (i % 26))).join("");

describe("the draft while a reply streams", () => {
  it("exists mid-stream, is a valid streaming message with the parts so far and the pending user message, and is coalesced", async () => {
    const storage = new MemoryStorage();
    await seed(storage);
    const recording = new RecordingStorage(storage);
    const session = await registry(recording, undefined, millisecondClock()).open(REF);
    const provider = new ScriptedProvider([{ reasoning: "think first", reasoningSummary: "Thought about it", text: LONG }], { chunkSize: 1, delayMs: 2 });
    let deltas = 0;
    let midStream: Promise<Uint8Array | undefined> | undefined;
    const run = session.run("stream a long answer", {
      provider,
      onEvent: (e) => {
        // MemoryStorage.read copies the bytes synchronously: this is the file at delta 150.
        if (e.type === "text-delta" && ++deltas === 150) midStream = storage.read(P.draft);
      },
    });
    const { events, outcome } = await drain(run);
    expect(deltas).toBe(200);

    const bytes = await midStream!;
    expect(bytes, "assistant_message.json exists mid-stream").toBeDefined();
    const text = decode(bytes)!;
    const draft = parseDraftJson(text) as ReturnType<typeof parseDraftJson> & { pending_messages: unknown[] };
    expect(draft.record_type).toBe("message");
    expect(draft.role).toBe("assistant");
    expect(draft.status).toBe("streaming");
    expect(draft.sequence).toBe(4);
    expect(draft.provider).toEqual(provider.identity);
    expect(draft.parts.map((p) => [p.sequence, p.type])).toEqual([
      [1, "reasoning"],
      [2, "reasoning-summary"],
      [3, "text"],
    ]);
    expect(draft.parts[0]).toMatchObject({ text: "think first" });
    expect(draft.parts[1]).toMatchObject({ text: "Thought about it" });
    const partial = (draft.parts[2] as { text: string }).text;
    expect(LONG.startsWith(partial)).toBe(true);
    expect(partial.length).toBeGreaterThan(0);
    expect(partial.length).toBeLessThanOrEqual(150);
    expect(draft.pending_messages).toHaveLength(1);
    const pending = MessageRecord.parse(draft.pending_messages[0]);
    expect(pending.role).toBe("user");
    expect(pending.sequence).toBe(3);
    expect(pending.parts).toEqual([{ sequence: 1, type: "text", text: "stream a long answer" }]);

    // The committed messages are the draft's (same ids), completed.
    expect(outcome!.messages[0]!.message_id).toBe(pending.message_id);
    expect(outcome!.messages[1]!.message_id).toBe(draft.message_id);
    expect(outcome!.messages[1]!.status).toBe("completed");
    expect(textOf(outcome!.messages[1]!)).toBe(LONG);

    // Coalesced: 200 deltas (and more events), far fewer writes; none after the commit.
    const writes = recording.count("replace", P.draft);
    expect(events.length).toBeGreaterThan(200);
    expect(writes).toBeGreaterThanOrEqual(2);
    expect(writes).toBeLessThanOrEqual(40);
    const lastWrite = recording.calls.map((c) => `${c.op} ${c.path}`).lastIndexOf(`replace ${P.draft}`);
    const commit = recording.calls.findIndex((c) => c.op === "append");
    expect(lastWrite).toBeLessThan(commit);
    expect(await readText(storage, P.draft)).toBeUndefined();
  });

  it("a slow draft write never paces the stream: every delta is delivered before the first write resolves", async () => {
    const storage = new MemoryStorage();
    await seed(storage);
    const recording = new RecordingStorage(storage);
    const session = await registry(recording, undefined, millisecondClock()).open(REF);
    const events: RunEvent[] = [];
    const deltasWhenWritesResolved: number[] = [];
    recording.delay = (call) => (call.op === "replace" && call.path === P.draft ? new Promise((resolve) => setTimeout(resolve, 200)) : undefined);
    recording.after = (call) => {
      if (call.op === "replace" && call.path === P.draft) deltasWhenWritesResolved.push(events.filter((e) => e.type === "text-delta").length);
    };
    const provider = new ScriptedProvider([{ text: LONG }], { chunkSize: 1 });
    const outcome = await session.run("go", { provider, onEvent: (e) => events.push(e) }).result;
    expect(events.filter((e) => e.type === "text-delta")).toHaveLength(200);
    expect(deltasWhenWritesResolved.length).toBeGreaterThanOrEqual(1);
    expect(deltasWhenWritesResolved[0]).toBe(200);
    expect(textOf(outcome.messages[1]!)).toBe(LONG);
    // The removal waited for the write in flight: no draft resurrected after the commit.
    const ops = recording.calls.filter((c) => c.path === P.draft && c.op !== "read").map((c) => c.op);
    expect(ops.at(-1)).toBe("remove");
    expect(await readText(storage, P.draft)).toBeUndefined();
    expect(shape(events)).toEqual(["step-started", "text-delta*", "usage", "committed"]);
  });

  it("between steps the draft holds the pending user message and the completed step", async () => {
    const storage = new MemoryStorage();
    await seed(storage);
    const recording = new RecordingStorage(storage);
    const session = await registry(recording, { draftFlush: { intervalMs: 0 } }, millisecondClock()).open(REF, { draftFlush: { intervalMs: 0 } });
    let duringTool: string | undefined;
    // The tool reads the draft once the write holding its call has landed (not after a guessed 20 ms).
    let toolCallStored!: () => void;
    const stored = new Promise<void>((resolve) => (toolCallStored = resolve));
    recording.after = (call) => {
      if (call.op === "replace" && call.path === P.draft && decode(call.bytes)!.includes("input-available")) toolCallStored();
    };
    const tools = [
      {
        name: "slow",
        execute: async () => {
          await stored;
          duringTool = await readText(storage, P.draft);
          return "ok";
        },
      },
    ];
    const provider = new ScriptedProvider([{ text: "calling", toolCalls: [{ id: "c1", name: "slow", input: {} }] }, { text: "done" }]);
    await session.run("use the tool", { provider, tools }).result;
    const draft = JSON.parse(duringTool!) as { parts: { type: string; state?: string }[]; pending_messages: { role: string }[] };
    expect(draft.parts.map((p) => [p.type, p.state])).toEqual([
      ["text", undefined],
      ["tool", "input-available"],
    ]);
    expect(draft.pending_messages.map((m) => m.role)).toEqual(["user"]);
  });
});

/**
 * The draft writes that reach `faulty`, as they start and settle, so that a provider can wait
 * for the draft flush of each event instead of betting that a 1 ms delay is enough for it (on
 * PostgreSQL a write takes longer, writes coalesced and the run finished before the crash).
 */
function watchDraftWrites(faulty: FaultyStorage): { storage: StoragePort; flushed(startedBefore: number): Promise<void>; started(): number } {
  let started = 0;
  let settled = 0;
  const waiting: (() => void)[] = [];
  const storage = new Proxy(faulty, {
    get(target, property) {
      if (property === "replace") {
        return async (path: string, bytes: Uint8Array, options?: WriteOptions): Promise<void> => {
          if (path === P.draft) started += 1;
          try {
            await target.replace(path, bytes, options);
          } finally {
            if (path === P.draft) settled += 1;
            for (const wake of waiting.splice(0)) wake();
          }
        };
      }
      const value: unknown = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return {
    storage,
    started: () => started,
    // A write that started after the event and every write before it settled, or the store died.
    async flushed(startedBefore) {
      while (!faulty.crash && !(started > startedBefore && settled === started)) await new Promise<void>((resolve) => waiting.push(resolve));
    },
  };
}

/** `step` streamed one event at a time, each draft-changing event only once the draft holding it was written. */
function pacedByDraftWrites(step: ScriptedStep, watch: ReturnType<typeof watchDraftWrites>): Provider {
  const inner = new ScriptedProvider([step], { chunkSize: 5 });
  return {
    identity: inner.identity,
    async *stream(request) {
      for await (const event of inner.stream(request)) {
        const startedBefore = watch.started();
        yield event;
        if (event.type === "text-delta" || event.type === "reasoning-delta" || event.type === "reasoning-summary") await watch.flushed(startedBefore);
      }
    },
  };
}

describe("a crash mid-stream leaves a recoverable draft", () => {
  const STEP = { reasoning: "raw reasoning", reasoningSummary: "Summary of thought", text: "The answer has several words in it." };

  /** Runs a streaming turn on a FaultyStorage that dies at the `draftWrite`-th draft write; returns the disk. */
  async function crashDuringDraftWrite(draftWrite: number): Promise<{ disk: StoragePort; deltas: number }> {
    const inner = new MemoryStorage();
    await seed(inner);
    const faulty = new FaultyStorage(inner, { crashAt: 1 + draftWrite }); // op 1 is the lock
    const watch = watchDraftWrites(faulty);
    const session = await registry(watch.storage, undefined, millisecondClock()).open(REF, { draftFlush: { intervalMs: 0 } });
    let deltas = 0;
    const run = session.run("crash me", {
      provider: pacedByDraftWrites(STEP, watch),
      onEvent: (e) => {
        if (e.type === "text-delta") deltas += 1;
      },
    });
    const { error } = await drain(run);
    expect(error).toBeInstanceOf(SimulatedCrashError);
    expect(faulty.crash!.operation).toMatchObject({ name: "replace", path: P.draft });
    const disk = await faulty.revive();
    await forceUnlock(disk);
    return { disk, deltas };
  }

  it("reopened: the live draft has its parts in order and the pending user message; finishDraft commits user + stopped", async () => {
    const { disk } = await crashDuringDraftWrite(8);
    const sessions = registry(disk, undefined, millisecondClock());
    const session = await sessions.open(REF);
    expect(session.diagnostics.filter((d) => d.fatal)).toEqual([]);
    expect(session.revision).toBe(1);
    const draft = session.draft!;
    expect(draft).toBeDefined();
    expect(draft.record.status).toBe("streaming");
    // Writes 1..7 landed: the empty draft, then one per event (3 reasoning chunks, the summary, 2 text chunks).
    expect(draft.record.parts).toEqual([
      { sequence: 1, type: "reasoning", text: "raw reasoning" },
      { sequence: 2, type: "reasoning-summary", text: "Summary of thought" },
      { sequence: 3, type: "text", text: "The answer" },
    ]);
    expect(draft.pending.map((m) => [m.role, textOf(m)])).toEqual([["user", "crash me"]]);

    const result = await session.finishDraft();
    expect(result).toEqual({ sequences: [3, 4], revision: 2 });
    expect(await readText(disk, P.draft)).toBeUndefined();
    const [user, stopped] = session.active.slice(2);
    expect(user!.message_id).toBe(draft.pending[0]!.message_id);
    expect(textOf(user!)).toBe("crash me");
    expect(stopped!.message_id).toBe(draft.record.message_id);
    expect(stopped!.status).toBe("stopped");
    expect(stopped!.parts.filter((p) => p.type !== "reasoning")).toEqual([
      { sequence: 2, type: "reasoning-summary", text: "Summary of thought" },
      { sequence: 3, type: "text", text: "The answer" },
    ]);
    const reopened = await sessions.open(REF);
    expect(reopened.draft).toBeUndefined();
    expect(reopened.diagnostics).toEqual([]);
    const history = await fullHistory(reopened);
    expectContiguous(history);
    expect(history).toHaveLength(4);
  });

  it("a crash at the very first draft write leaves no draft: the run is simply absent", async () => {
    const { disk } = await crashDuringDraftWrite(1);
    const session = await registry(disk, undefined, millisecondClock()).open(REF);
    expect(session.diagnostics).toEqual([]);
    expect(session.draft).toBeUndefined();
    expect(session.active).toHaveLength(2);
  });

  it("a crash after only the empty draft: finishing commits the user message alone", async () => {
    const { disk } = await crashDuringDraftWrite(2);
    const session = await registry(disk, undefined, millisecondClock()).open(REF);
    expect(session.draft!.record.parts).toEqual([]);
    expect(await session.finishDraft()).toEqual({ sequences: [3], revision: 2 });
    expect(session.active.map((m) => [m.sequence, m.role])).toEqual([
      [1, "user"],
      [2, "assistant"],
      [3, "user"],
    ]);
  });

  it("a new run first commits the recovered draft as its own commit, then proceeds", async () => {
    const { disk } = await crashDuringDraftWrite(8);
    const session = await registry(disk, undefined, millisecondClock()).open(REF);
    const recoveredId = session.draft!.record.message_id;
    const provider = ScriptedProvider.replies("Fresh answer.");
    const { events, outcome } = await drain(session.run("try again", { provider }));
    expect(events[0]).toEqual({ type: "committed", revision: 2, sequences: [3, 4] });
    expect(shape(events)).toEqual(["committed", "step-started", "text-delta*", "usage", "committed"]);
    expect(outcome!.revision).toBe(3);
    expect(outcome!.messages.map((m) => m.sequence)).toEqual([5, 6]);
    // The stopped message is history for the next request.
    const request = provider.requests[0]!;
    expect(request.messages.map((m) => m.sequence)).toEqual([1, 2, 3, 4, 5]);
    expect(request.messages[3]!.message_id).toBe(recoveredId);
    expect(request.messages[3]!.status).toBe("stopped");
    expect(textOf(request.messages[3]!)).toBe("The answer");
    expect(await readText(disk, P.draft)).toBeUndefined();
    const history = await fullHistory(session);
    expectContiguous(history);
    expect(history.map((m) => textOf(m))).toEqual(["earlier question", "earlier answer", "crash me", "The answer", "try again", "Fresh answer."]);
  });
});
