import { describe, expect, it } from "vitest";
import { MemoryStorage, Sessions, StorageError, type StoragePort } from "../../core/mod.ts";
import { ScriptedProvider } from "../../testing/mod.ts";

/** A store whose next append to an `active.jsonl` fails, as a full or broken disk would. */
function failingAppends(inner: MemoryStorage): StoragePort & { failNext: boolean } {
  const wrapper = {
    failNext: false,
    read: (path: string) => inner.read(path),
    readTail: (path: string, max: number) => inner.readTail(path, max),
    list: (dir: string) => inner.list(dir),
    replace: (path: string, bytes: Uint8Array) => inner.replace(path, bytes),
    createExclusive: (path: string, bytes: Uint8Array) => inner.createExclusive(path, bytes),
    truncate: (path: string, length: number) => inner.truncate(path, length),
    remove: (path: string) => inner.remove(path),
    move: (from: string, to: string) => inner.move(from, to),
    async append(path: string, bytes: Uint8Array) {
      if (wrapper.failNext && path.endsWith("active.jsonl")) {
        wrapper.failNext = false;
        throw new StorageError(`${path}: simulated I/O error`, { path });
      }
      return inner.append(path, bytes);
    },
  };
  return wrapper;
}

describe("a run whose own commit fails on a storage error", () => {
  it("rejects with the storage's typed error and leaves the run recoverable in the draft", async () => {
    const inner = new MemoryStorage();
    const storage = failingAppends(inner);
    const sessions = new Sessions({ storage });
    const session = await sessions.create({ agentId: "a", workspaceId: "w", sessionId: "s" });
    storage.failNext = true;
    const error = await session.run("keep me", { provider: ScriptedProvider.replies("an answer") }).result.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageError);
    const reopened = await new Sessions({ storage: inner }).open("a/w/s");
    expect(reopened.active).toEqual([]);
    const pending = reopened.draft?.pending ?? [];
    expect(pending.map((m) => [m.role, m.parts[0]?.type === "text" ? m.parts[0].text : null])).toEqual([
      ["user", "keep me"],
      ["assistant", "an answer"],
    ]);
    await reopened.finishDraft();
    expect(reopened.active.map((m) => m.role)).toEqual(["user", "assistant"]);
  });
});
