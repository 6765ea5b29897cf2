/**
 * Manual compaction (docs/FORMAT.md "Compaction"): the oldest messages of Active up to the turn boundary nearest floor(n/2), one
 * summarizer call with the previous cumulative summary, a segment with one footer,
 * Active replaced, meta accounting; failures change nothing.
 */
import { describe, expect, test } from "vitest";
import {
  CompactionFailedError,
  estimateTextTokens,
  estimateTokens,
  formatSessionRef,
  InvalidInputError,
  MemoryStorage,
  type MessageRecord,
  StorageFullError,
} from "../../core/mod.ts";
import type { Session } from "../../core/session/session.ts";
import {
  deferred,
  expectContiguous,
  fullHistory,
  line,
  lines,
  metaOnDisk,
  P,
  readText,
  RecordingStorage,
  REF,
  registry,
  rejection,
  segmentName,
  snapshot,
  withoutLineRevisions,
} from "../support/session.ts";
import { assistant, expectMetaConsistent, summarizer, user } from "./support.ts";

async function sessionWith(count: number, storage = new MemoryStorage()): Promise<{ storage: MemoryStorage; session: Session }> {
  const session = await registry(storage).create(REF);
  const batch = Array.from({ length: count }, (_, i) => (i % 2 === 0 ? user(`question ${i + 1}`, `m_${i + 1}`) : assistant(`answer ${i + 1}`, `m_${i + 1}`)));
  if (count > 0) await session.append(batch.slice(0, 3));
  if (count > 3) await session.append(batch.slice(3));
  return { storage, session };
}

describe("compact()", () => {
  test("selects the oldest up to the turn boundary nearest floor(n/2) (6 of 11: floor is 5, a reply), calls the summarizer once with only them, writes segment + footer and the kept half", async () => {
    const { storage, session } = await sessionWith(11);
    const before: MessageRecord[] = [...session.active];
    const summarize = summarizer(() => ({ text: "first summary" }));
    const outcome = await session.compact({ summarizer: summarize });

    expect(summarize.calls).toHaveLength(1);
    expect(summarize.calls[0]!.previousSummary).toBeNull();
    expect(summarize.calls[0]!.messages).toEqual(before.slice(0, 6));
    expect(summarize.calls[0]!.messages.some((m) => "batch_size" in m)).toBe(false);
    expect(outcome).toMatchObject({ revision: 3, removedMessages: 6, keptMessages: 5, segment: { start: 1, end: 6 }, summaryChars: 13 });

    const names = await storage.list(P.segmentsDir);
    expect(names).toEqual([segmentName(1, 6)]);
    expect(names[0]).toBe("000000000001-000000000006.jsonl");
    const footer = session.summary!;
    expect(footer).toMatchObject({ record_type: "summary", session_id: "s1", through_sequence: 6, text: "first summary" });
    expect(footer.summary_id).toMatch(/^sum_/);
    expect(withoutLineRevisions(await readText(storage, `${P.segmentsDir}/${names[0]}`))).toBe(lines(before.slice(0, 6)) + line(footer));
    expect(withoutLineRevisions(await readText(storage, P.active))).toBe(lines(before.slice(6)));
    expect(session.active).toEqual(before.slice(6));
    expect(await session.segments()).toEqual([{ start: 1, end: 6 }]);

    const meta = await metaOnDisk(storage);
    expect(meta["compaction"]).toEqual({
      completed: 1,
      removed_messages: 6,
      removed_tokens_estimate: estimateTokens(before.slice(0, 6)),
      last_before_tokens: estimateTokens(before),
      last_after_tokens: estimateTextTokens("first summary") + estimateTokens(before.slice(6)),
      last_compacted_sequence: 11,
    });
    expect(meta["message_count"]).toBe(11);
    await expectMetaConsistent(storage, session);
  });

  test("the next compaction gets the previous cumulative summary and only the new oldest half", async () => {
    const { storage, session } = await sessionWith(8);
    const summarize = summarizer((r) => ({
      text: `${r.previousSummary ?? ""}+${r.messages.map((m) => m.sequence).join(",")}`,
      usage: { input_tokens: 10, output_tokens: 5, cost_usd_micros: 1200 },
    }));
    await session.compact({ summarizer: summarize });
    await session.append([user("9"), assistant("10")]);
    const active = [...session.active];
    const outcome = await session.compact({ summarizer: summarize });
    expect(summarize.calls).toHaveLength(2);
    expect(summarize.calls[1]!.previousSummary).toBe("+1,2,3,4");
    expect(summarize.calls[1]!.messages.map((m) => m.sequence)).toEqual([5, 6, 7, 8]);
    expect(outcome).toMatchObject({ segment: { start: 5, end: 8 }, removedMessages: 4, keptMessages: 2, costUsdMicros: 1200 });
    expect(await storage.list(P.segmentsDir)).toEqual([segmentName(1, 4), segmentName(5, 8)]);
    expect(session.summary?.text).toBe("+1,2,3,4+5,6,7,8");
    const compaction = (await metaOnDisk(storage))["compaction"] as Record<string, number>;
    expect(compaction["completed"]).toBe(2);
    expect(compaction["removed_messages"]).toBe(8);
    expect(compaction["cost_usd_micros"]).toBe(2400);
    expect(compaction["summary_usage"]).toEqual({ input_tokens: 20, output_tokens: 10 });
    expect(compaction["last_before_tokens"]).toBe(estimateTextTokens("+1,2,3,4") + estimateTokens(active));
    expect(compaction["last_after_tokens"]).toBe(estimateTextTokens("+1,2,3,4+5,6,7,8") + estimateTokens(active.slice(4)));
    expectContiguous(await fullHistory(session));
    await expectMetaConsistent(storage, session);
  });

  test("a segment write that fails puts meta.json back, changes nothing else and rejects with the storage's typed error", async () => {
    const inner = new MemoryStorage();
    const { session } = await sessionWith(6, inner);
    const before = await snapshot(inner);
    const failing = new Proxy(inner, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (prop !== "replace") return typeof value === "function" ? value.bind(target) : value;
        return async (path: string, bytes: Uint8Array) => {
          if (path.includes("/segments/")) throw new StorageFullError(`${path}: simulated full disk`, { path });
          return target.replace(path, bytes);
        };
      },
    });
    const again = await registry(failing).open(REF);
    const refused = await again.compact({ summarizer: summarizer() }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StorageFullError);
    expect((refused as Error).message).not.toContain("took effect");
    expect(await snapshot(inner)).toEqual(before);
    const reopened = await registry(inner).open(REF);
    expect(reopened.diagnostics).toEqual([]);
    expect(reopened.revision).toBe(session.revision);
  });

  test("an Active write that fails after meta.json and the segment: the compaction took effect, and its error says so", async () => {
    const inner = new MemoryStorage();
    const { session } = await sessionWith(6, inner);
    const messages = (await fullHistory(session)).map((m) => m.message_id);
    const failing = new Proxy(inner, {
      get(target, prop) {
        // Plans by this proxy's calls, whatever the backend runs itself.
        if (prop === "applyCommitPlan") return undefined;
        const value = Reflect.get(target, prop, target) as unknown;
        if (prop !== "replace") return typeof value === "function" ? value.bind(target) : value;
        return async (path: string, bytes: Uint8Array) => {
          if (path === P.active) throw new StorageFullError(`${path}: simulated full disk; nothing was written`, { path });
          return target.replace(path, bytes);
        };
      },
    });
    const again = await registry(failing).open(REF);
    const refused = await again.compact({ summarizer: summarizer() }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StorageFullError);
    // The open after it finds meta.json older than the segment it names is not: rebuilt, at a revision of its own.
    const reopened = await registry(inner).open(REF);
    expect(reopened.revision).toBeGreaterThan(session.revision);
    expect((refused as Error).message).toBe(
      `compact on ${formatSessionRef(REF)} failed: ${P.active}: simulated full disk; nothing was written; ` +
        `the writes before it took effect: the session is at revision ${reopened.revision} now (it was at ${session.revision})`,
    );
    expect(again.revision).toBe(reopened.revision);
    expect((await fullHistory(reopened)).map((m) => m.message_id)).toEqual(messages);
    expect(reopened.summary).not.toBeNull();
  });

  test("a failed close's put-back takes the lock again and never writes over a meta.json another writer wrote meanwhile", async () => {
    const inner = new MemoryStorage();
    await sessionWith(6, inner);
    const theirs = new TextEncoder().encode('{"schema_version":1,"written_by":"another writer"}\n');
    let locks = 0;
    const failing = new Proxy(inner, {
      get(target, prop) {
        // Plans and the lock by this proxy's calls, whatever the backend runs itself.
        if (prop === "applyCommitPlan" || prop === "acquireLock" || prop === "releaseLock") return undefined;
        const value = Reflect.get(target, prop, target) as unknown;
        if (prop === "replace") {
          return async (path: string, bytes: Uint8Array) => {
            if (path.includes("/segments/")) throw new StorageFullError(`${path}: simulated full disk`, { path });
            return target.replace(path, bytes);
          };
        }
        if (prop === "createExclusive") {
          // The close's plan gave the lock back when it failed; before the put-back takes it again, another writer commits.
          return async (path: string, bytes: Uint8Array) => {
            if (path === P.lock && ++locks === 2) await target.replace(P.meta, theirs);
            return target.createExclusive(path, bytes);
          };
        }
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const again = await registry(failing).open(REF);
    await expect(again.compact({ summarizer: summarizer() })).rejects.toBeInstanceOf(StorageFullError);
    expect(locks).toBe(2);
    expect(await inner.read(P.meta)).toEqual(theirs);
    expect(await inner.read(P.lock)).toBeUndefined();
  });

  test("is one segment replace, one Active replace and one meta replace under the lock", async () => {
    const inner = new MemoryStorage();
    const { session } = await sessionWith(4, inner);
    const storage = new RecordingStorage(inner);
    const again = await registry(storage).open(REF);
    storage.reset();
    await again.compact({ summarizer: summarizer() });
    const mutations = storage.mutations(P.dir);
    expect(mutations[0]).toBe("createExclusive writer.lock");
    expect(mutations.at(-1)).toBe("remove writer.lock");
    // meta.json first (naming the new segment), then the segment, then Active: a crash before the
    // segment leaves a hint the files do not confirm (the open lists segments/ and rebuilds
    // meta.json); a crash before Active leaves an overlap, which recovery removes.
    expect(mutations.slice(1, -1)).toEqual(["replace meta.json", `replace messages/segments/${segmentName(1, 2)}`, "replace messages/active.jsonl"]);
    expect(session.revision).toBe(2);
  });

  test.each<[string, (signal: AbortController) => ReturnType<typeof summarizer>, boolean]>([
    ["the summarizer throws", () =>
      summarizer(() => {
        throw new Error("provider down");
      }), false],
    ["the summarizer rejects", () => summarizer(async () => Promise.reject(new Error("503"))), false],
    ["the summary is empty", () => summarizer(() => ({ text: "" })), false],
    ["the summary is whitespace", () => summarizer(() => ({ text: " \n\t " })), false],
    ["the summary is not a string", () => summarizer(() => ({}) as { text: string }), false],
    ["it is cancelled before the call", (c) => {
      c.abort();
      return summarizer();
    }, true],
    ["it is cancelled during the call", (c) =>
      summarizer(() => {
        c.abort();
        return { text: "too late" };
      }), true],
  ])("fails with CompactionFailedError and changes nothing when %s", async (_name, make, cancelled) => {
    const { storage, session } = await sessionWith(6);
    const controller = new AbortController();
    const summarize = make(controller);
    const before = await snapshot(storage);
    const error = await rejection(session.compact({ summarizer: summarize, signal: controller.signal }), CompactionFailedError, "compaction-failed");
    expect(error.message).toContain("nothing changed");
    expect(error.details["cancelled"] ?? false).toBe(cancelled);
    expect(await snapshot(storage)).toEqual(before);
    expect(session.revision).toBe(2);
    expect(await session.segments()).toEqual([]);
    expect(session.active).toHaveLength(6);
    expect(summarize.calls.length).toBeLessThanOrEqual(1);
    // A later compaction works.
    // Six alternating messages: floor(6/2) = 3 is a reply; the nearest turn boundaries are 2 and 4 → 4.
    expect((await session.compact({ summarizer: summarizer() })).segment).toEqual({ start: 1, end: 4 });
  });

  test("a cancellation while the summarizer is pending fails it", async () => {
    const { storage, session } = await sessionWith(4);
    const gate = deferred<{ text: string }>();
    const reached = deferred();
    const controller = new AbortController();
    const before = await snapshot(storage);
    const pending = session.compact({ summarizer: summarizer(() => (reached.resolve(), gate.promise)), signal: controller.signal });
    await reached.promise; // the summarizer is pending (on PostgreSQL the reads before it take a while)
    controller.abort();
    gate.resolve({ text: "arrived after the abort" });
    const error = await rejection(pending, CompactionFailedError, "compaction-failed");
    expect(error.details["cancelled"]).toBe(true);
    expect(await snapshot(storage)).toEqual(before);
  });

  test("a summarizer that ignores the signal and never answers does not hold the compaction: it fails at the abort, and the session writes again", async () => {
    const { storage, session } = await sessionWith(4);
    const reached = deferred();
    const controller = new AbortController();
    const before = await snapshot(storage);
    const pending = session.compact({ summarizer: summarizer(() => (reached.resolve(), new Promise<never>(() => {}))), signal: controller.signal });
    await reached.promise;
    controller.abort();
    const error = await rejection(pending, CompactionFailedError, "compaction-failed");
    expect(error.details["cancelled"]).toBe(true);
    expect(await snapshot(storage)).toEqual(before);
    await session.append({ role: "user", parts: [{ type: "text", text: "after the abort" }] });
    expect(session.active).toHaveLength(5);
  });

  test.each([0, 1])("with %i message(s) changes nothing and returns segment null", async (count) => {
    const { storage, session } = await sessionWith(count);
    const before = await snapshot(storage);
    const summarize = summarizer();
    const outcome = await session.compact({ summarizer: summarize });
    expect(outcome).toEqual({ revision: session.revision, removedMessages: 0, keptMessages: count, segment: null });
    expect(summarize.calls).toHaveLength(0);
    expect(await snapshot(storage)).toEqual(before);
  });

  test("without any summarizer is InvalidInputError (a rejected promise), nothing written", async () => {
    const { storage, session } = await sessionWith(4);
    const before = await snapshot(storage);
    const pending = session.compact();
    expect(pending).toBeInstanceOf(Promise);
    await rejection(pending, InvalidInputError, "invalid-input");
    expect(await snapshot(storage)).toEqual(before);
  });

  test("uses the session's summarizer when the call gives none", async () => {
    const storage = new MemoryStorage();
    const summarize = summarizer(() => ({ text: "from options" }));
    const session = await registry(storage).create(REF, { summarizer: summarize });
    await session.append([user("1"), assistant("2")]);
    await session.compact();
    expect(summarize.calls).toHaveLength(1);
    expect(session.summary?.text).toBe("from options");
  });

  test("100 compactions in a row, with messages appended between, keep Active and the summary bounded", async () => {
    const storage = new MemoryStorage();
    const BOUND = 200;
    const summarize = summarizer((r) => {
      const text = `${r.previousSummary ?? ""}|${r.messages.map((m) => m.sequence).join(",")}`;
      return { text: text.length > BOUND ? text.slice(-BOUND) : text };
    });
    const session = await registry(storage).create(REF, { summarizer: summarize });
    let maxActive = 0;
    let maxActiveBytes = 0;
    for (let i = 0; i < 100; i++) {
      await session.append([user(`q${i}`), assistant(`a${i}`), user(`more ${i}`)]);
      maxActive = Math.max(maxActive, session.active.length);
      const outcome = await session.compact();
      expect(outcome.segment).not.toBeNull();
      expect(session.summary!.text.length).toBeLessThanOrEqual(BOUND);
      maxActiveBytes = Math.max(maxActiveBytes, (await storage.read(P.active))!.length);
    }
    expect(summarize.calls).toHaveLength(100);
    // Active holds at most the 3 new messages plus ceil of half the previous window: it settles at 3 to 4.
    expect(maxActive).toBeLessThanOrEqual(7);
    expect(session.active.length).toBeLessThanOrEqual(4);
    expect(maxActiveBytes).toBeLessThan(4 * 400);
    expect(await session.segments()).toHaveLength(100);
    expect(session.meta.compaction?.completed).toBe(100);
    expect(session.meta.message_count).toBe(300);
    expect(session.newestSegment!.end + session.active.length).toBe(300);
    const reopened = await registry(storage).open(REF);
    expect(reopened.diagnostics).toEqual([]);
    expect(reopened.summary!.text.length).toBeLessThanOrEqual(BOUND);
    expectContiguous(await fullHistory(reopened));
    await expectMetaConsistent(storage, reopened);
  });
});
