/**
 * A reload and an operation on one handle take one operation slot, in call order (issue 28:
 * the README's `onCommit(... && session.reload())` called without awaiting it, then `run()`
 * or `append()`). A real conflict leaves the handle able to reload and retry once, and its
 * error names the revision this handle checked and the one found.
 */
import { describe, expect, test } from "vitest";
import { MemoryStorage, RevisionConflictError, type StoragePort } from "../../core/mod.ts";
import { deferred, fullHistory, P, REF, registry, rejection } from "../support/session.ts";
import { assistant, expectMetaConsistent, summarizer, user } from "./support.ts";

/**
 * A store whose next read of `meta.json` (once armed; alone or in a `readMany`) waits for `release()`: the reload that
 * makes it is held in the middle, so whatever else the handle does meanwhile is forced to
 * happen in that window. Every other call is MemoryStorage's, which settles in microtasks.
 */
function gatedMetaRead(inner: MemoryStorage): { storage: StoragePort; arm: () => void; release: () => void; reached: Promise<void> } {
  let armed = false;
  const gate = deferred();
  const reached = deferred();
  const storage = new Proxy(inner, {
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      const hold = async (paths: readonly string[]) => {
        if (armed && paths.includes(P.meta)) {
          armed = false;
          reached.resolve();
          await gate.promise;
        }
      };
      // A backend with `readMany` (PostgreSQL in the postgres-engine project) reads meta.json in it.
      if (name === "readMany" && typeof value === "function") {
        return async (requests: readonly { path?: string }[]) => {
          await hold(requests.flatMap((r) => (r.path === undefined ? [] : [r.path])));
          return (value as (r: unknown) => Promise<unknown>).call(target, requests);
        };
      }
      if (name !== "read") return typeof value === "function" ? value.bind(target) : value;
      return async (path: string) => {
        await hold([path]);
        return target.read(path);
      };
    },
  });
  return { storage, arm: () => (armed = true), release: () => gate.resolve(), reached: reached.promise };
}

/** Lets every pending microtask run to its end (all of MemoryStorage's work; a real backend's may still be in flight). */
const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("reload() and operations share one slot per handle", () => {
  test("an append called right after an unawaited reload waits for it and commits; nothing sticks", async () => {
    const memory = new MemoryStorage();
    const { storage, arm, release, reached } = gatedMetaRead(memory);
    const tabA = await registry(storage).create(REF);
    const tabB = await registry(storage).open(REF);
    await tabB.append(user("from B", "m_b"));

    arm();
    const reloading = tabA.reload();
    const appending = tabA.append(user("from A", "m_a"));
    let appendSettled = false;
    void appending.then(() => (appendSettled = true), () => (appendSettled = true));
    await reached;
    await settled();
    // The reload is held at its read of meta.json; the append has not gone around it.
    expect(appendSettled).toBe(false);
    release();
    await reloading;
    const result = await appending;
    expect(result).toEqual({ sequences: [2], revision: 2 });
    expect((await fullHistory(tabA)).map((m) => m.message_id)).toEqual(["m_b", "m_a"]);
    // The next append goes through too: no conflict was left behind.
    expect((await tabA.append(user("again", "m_c"))).revision).toBe(3);
    await expectMetaConsistent(memory, tabA);
  });

  test("a reload called while an operation runs waits for it, then reads what it committed", async () => {
    const storage = new MemoryStorage();
    const tab = await registry(storage).create(REF);
    await tab.append([user("1", "m_1"), assistant("2", "m_2"), user("3", "m_3"), assistant("4", "m_4")]);
    const gate = deferred<{ text: string }>();
    const called = deferred();
    const compacting = tab.compact({ summarizer: summarizer(() => (called.resolve(), gate.promise)) });
    await called.promise;
    let reloaded = false;
    const reloading = tab.reload().then(() => (reloaded = true));
    await settled();
    // The compaction holds the slot: the reload waits instead of swapping the state under it.
    expect(reloaded).toBe(false);
    gate.resolve({ text: "summary" });
    expect((await compacting).revision).toBe(2);
    await reloading;
    expect(tab.revision).toBe(2);
    expect(tab.active.map((m) => m.message_id)).toEqual(["m_3", "m_4"]);
    expect(await tab.segments()).toEqual([{ start: 1, end: 2 }]);
    await expectMetaConsistent(storage, tab);
    expect((await tab.append(user("after", "m_after"))).revision).toBe(3);
  });

  test("a real conflict names both revisions truly; one reload lets the handle retry", async () => {
    const storage = new MemoryStorage();
    const tabA = await registry(storage).create(REF);
    const tabB = await registry(storage).open(REF);
    await tabB.append(user("from B", "m_b"));
    await tabB.append(user("from B again", "m_b2"));

    const error = await rejection(tabA.append(user("lost", "m_lost")), RevisionConflictError, "revision-conflict");
    expect(error.details).toMatchObject({ expected: 0, found: 2 });
    expect(error.message).toContain("meta.json is at revision 2 but this handle read 0");
    // Refused again (nothing is written) until the host reloads…
    await rejection(tabA.append(user("lost", "m_lost")), RevisionConflictError, "revision-conflict");
    // …and one reload is enough, even one not awaited before the retry.
    void tabA.reload();
    expect(await tabA.append(user("retried", "m_retry"))).toEqual({ sequences: [3], revision: 3 });
    expect((await fullHistory(tabA)).map((m) => m.message_id)).toEqual(["m_b", "m_b2", "m_retry"]);
  });
});
