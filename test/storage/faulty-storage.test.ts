import { describe, expect, it } from "vitest";
import { MemoryStorage, SessionfoldError } from "../../core/mod.ts";
import { runStorageTests } from "../../testing/storage-conformance.ts";
import { enumerateCrashPoints, FaultyStorage, SimulatedCrashError } from "../../testing/mod.ts";
import type { StoragePort } from "../../core/mod.ts";

runStorageTests("FaultyStorage without faults", () => {
  const inner = new MemoryStorage();
  return { storage: new FaultyStorage(inner), reopen: async () => new FaultyStorage(inner) };
});

runStorageTests("FaultyStorage with a crash point never reached", () => {
  const inner = new MemoryStorage();
  return { storage: new FaultyStorage(inner, { crashAt: 1_000_000 }), reopen: async () => new FaultyStorage(inner) };
});

const bytes = (text: string) => new TextEncoder().encode(text);
const text = async (storage: StoragePort, path: string) => {
  const read = await storage.read(path);
  return read === undefined ? undefined : new TextDecoder().decode(read);
};

/** A small session-like write sequence: lock, meta, two appends, meta, unlock. */
async function scenario(storage: StoragePort): Promise<void> {
  await storage.createExclusive("s/writer.lock", bytes('{"pid":1}'));
  await storage.replace("s/meta.json", bytes('{"revision":1}'));
  await storage.append("s/messages/active.jsonl", bytes('{"sequence":1}\n'));
  await storage.append("s/messages/active.jsonl", bytes('{"sequence":2}\n'));
  await storage.replace("s/meta.json", bytes('{"revision":2}'));
  await storage.remove("s/writer.lock");
}

describe("FaultyStorage crash model", () => {
  it("counts and logs mutating operations only, in issue order", async () => {
    const faulty = new FaultyStorage(new MemoryStorage());
    await scenario(faulty);
    await faulty.read("s/meta.json");
    await faulty.list("s");
    await faulty.readTail("s/messages/active.jsonl", 4);
    await faulty.truncate("s/messages/active.jsonl", 15);
    await faulty.move("s", "archived/s");
    expect(faulty.operationCount).toBe(8);
    expect(faulty.log.map(({ k, name, path }) => `${k} ${name} ${path}`)).toEqual([
      "1 createExclusive s/writer.lock",
      "2 replace s/meta.json",
      "3 append s/messages/active.jsonl",
      "4 append s/messages/active.jsonl",
      "5 replace s/meta.json",
      "6 remove s/writer.lock",
      "7 truncate s/messages/active.jsonl",
      "8 move s",
    ]);
    expect(faulty.log[2]).toMatchObject({ bytes: 15 });
    expect(faulty.log[6]).toMatchObject({ length: 15 });
    expect(faulty.log[7]).toMatchObject({ to: "archived/s" });
    expect(faulty.alive).toBe(true);
    expect(faulty.crash).toBeUndefined();
  });

  it("numbers concurrently issued operations in issue order", async () => {
    const faulty = new FaultyStorage(new MemoryStorage());
    await Promise.all([faulty.append("a", bytes("1")), faulty.replace("b", bytes("2")), faulty.remove("c")]);
    expect(faulty.log.map((op) => op.name)).toEqual(["append", "replace", "remove"]);
  });

  it("does not count a call rejected for an invalid path", async () => {
    const faulty = new FaultyStorage(new MemoryStorage(), { crashAt: 1 });
    await expect(faulty.replace("../x", bytes("1"))).rejects.toMatchObject({ code: "invalid-input" });
    await expect(faulty.move("a", "/abs")).rejects.toMatchObject({ code: "invalid-input" });
    expect(faulty.log).toEqual([]);
    expect(faulty.alive).toBe(true);
    await expect(faulty.replace("ok", bytes("1"))).rejects.toBeInstanceOf(SimulatedCrashError);
  });

  it("crashAt k: operations before k take effect, operation k does not", async () => {
    const faulty = new FaultyStorage(new MemoryStorage(), { crashAt: 5 });
    const error = await scenario(faulty).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(SimulatedCrashError);
    expect(faulty.operationCount).toBe(4);
    expect(faulty.log).toHaveLength(5);
    expect(faulty.crash).toEqual({ operation: faulty.log[4], tornBytes: 0 });
    const next = await faulty.revive();
    expect(await text(next, "s/meta.json")).toBe('{"revision":1}');
    expect(await text(next, "s/messages/active.jsonl")).toBe('{"sequence":1}\n{"sequence":2}\n');
    expect(await text(next, "s/writer.lock")).toBe('{"pid":1}');
  });

  it("each kind of operation crashing has no effect at all", async () => {
    const cases: [string, (s: StoragePort) => Promise<unknown>][] = [
      ["replace", (s) => s.replace("f", bytes("new"))],
      ["createExclusive", (s) => s.createExclusive("g", bytes("new"))],
      ["truncate", (s) => s.truncate("f", 1)],
      ["remove", (s) => s.remove("f")],
      ["move", (s) => s.move("f", "h")],
      ["append", (s) => s.append("f", bytes("new"))],
    ];
    for (const [name, crashing] of cases) {
      const inner = new MemoryStorage();
      await inner.replace("f", bytes("old"));
      const faulty = new FaultyStorage(inner, { crashAt: 1 });
      await expect(crashing(faulty), name).rejects.toBeInstanceOf(SimulatedCrashError);
      const next = await faulty.revive();
      expect(await next.list(""), name).toEqual(["f"]);
      expect(await text(next, "f"), name).toBe("old");
    }
  });

  it("the error is a typed SessionfoldError with code internal naming the operation and path", async () => {
    const faulty = new FaultyStorage(new MemoryStorage(), { crashAt: 1 });
    const error = await faulty.move("from/x", "to/y").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SessionfoldError);
    expect(error).toBeInstanceOf(SimulatedCrashError);
    expect(error).toMatchObject({ code: "internal", name: "SimulatedCrashError" });
    expect((error as Error).message).toContain('move "from/x" -> "to/y"');
    expect((error as Error).message).toContain("operation 1");
    const later = await faulty.read("a/b").catch((e: unknown) => e);
    expect((later as Error).message).toContain('read "a/b"');
    expect((later as Error).message).toContain('move "from/x"');
  });

  it("a crashing append writes the torn prefix of tornBytes, then throws", async () => {
    const inner = new MemoryStorage();
    const faulty = new FaultyStorage(inner, { crashAt: 2, tornBytes: 5 });
    await faulty.append("log.jsonl", bytes('{"a":1}\n'));
    await expect(faulty.append("log.jsonl", bytes('{"b":22}\n'))).rejects.toThrow(/after writing 5 of 9 bytes/);
    expect(faulty.crash?.tornBytes).toBe(5);
    expect(faulty.operationCount).toBe(1);
    const next = await faulty.revive();
    expect(await text(next, "log.jsonl")).toBe('{"a":1}\n{"b":');
  });

  it("tornBytes may be a function of the bytes, and is clamped to the append's length", async () => {
    const half = new FaultyStorage(new MemoryStorage(), { crashAt: 1, tornBytes: (b) => b.length / 2 });
    await half.append("f", bytes("abcdefgh")).catch(() => {});
    expect(await text(await half.revive(), "f")).toBe("abcd");

    const tooMany = new FaultyStorage(new MemoryStorage(), { crashAt: 1, tornBytes: 1000 });
    await tooMany.append("f", bytes("abc")).catch(() => {});
    expect(tooMany.crash?.tornBytes).toBe(3);
    expect(await text(await tooMany.revive(), "f")).toBe("abc");

    const negative = new FaultyStorage(new MemoryStorage(), { crashAt: 1, tornBytes: -4 });
    await negative.append("f", bytes("abc")).catch(() => {});
    expect(await (await negative.revive()).read("f")).toBeUndefined();
  });

  it("tornBytes is ignored when the crashing operation is not an append", async () => {
    const faulty = new FaultyStorage(new MemoryStorage(), { crashAt: 1, tornBytes: 3 });
    await faulty.replace("f", bytes("abcdef")).catch(() => {});
    expect(faulty.crash?.tornBytes).toBe(0);
    expect(await (await faulty.revive()).read("f")).toBeUndefined();
  });

  it("after the crash every operation, reads included, throws SimulatedCrashError", async () => {
    const faulty = new FaultyStorage(new MemoryStorage(), { crashAt: 1 });
    await faulty.replace("f", bytes("x")).catch(() => {});
    expect(faulty.alive).toBe(false);
    const calls: (() => Promise<unknown>)[] = [
      () => faulty.read("f"),
      () => faulty.readTail("f", 1),
      () => faulty.list(""),
      () => faulty.replace("f", bytes("y")),
      () => faulty.append("f", bytes("y")),
      () => faulty.createExclusive("g", bytes("y")),
      () => faulty.truncate("f", 0),
      () => faulty.remove("f"),
      () => faulty.move("f", "g"),
    ];
    for (const call of calls) await expect(call()).rejects.toBeInstanceOf(SimulatedCrashError);
    expect(faulty.log).toHaveLength(1);
    expect(await (await faulty.revive()).list("")).toEqual([]);
    await expect(faulty.read("f")).rejects.toBeInstanceOf(SimulatedCrashError);
  });

  it("calls in flight when the process dies never deliver their result", async () => {
    const faulty = new FaultyStorage(new MemoryStorage(), { crashAt: 3 });
    const results = await Promise.allSettled([
      faulty.append("log", bytes("1")),
      faulty.read("log"),
      faulty.append("log", bytes("2")),
      faulty.append("log", bytes("3")),
    ]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected", "rejected"]);
    for (const r of results) expect((r as PromiseRejectedResult).reason).toBeInstanceOf(SimulatedCrashError);
    expect(faulty.operationCount).toBe(2);
    expect(faulty.crash?.operation.k).toBe(3);
    // Operations 1 and 2 reached the disk; only their acknowledgements were lost.
    expect(await text(await faulty.revive(), "log")).toBe("12");
  });

  it("revive waits for in-flight inner calls and returns the inner store as the next process sees it", async () => {
    const inner = new MemoryStorage();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow: StoragePort = {
      read: (path) => inner.read(path),
      readTail: (path, maxBytes) => inner.readTail(path, maxBytes),
      list: (dir) => inner.list(dir),
      replace: (path, b) => inner.replace(path, b),
      append: async (path, b) => {
        await gate;
        await inner.append(path, b);
      },
      createExclusive: (path, b) => inner.createExclusive(path, b),
      truncate: (path, length) => inner.truncate(path, length),
      remove: (path) => inner.remove(path),
      move: (from, to) => inner.move(from, to),
    };
    const faulty = new FaultyStorage(slow, { crashAt: 2, tornBytes: 2 });
    const first = faulty.append("f", bytes("abc"));
    const second = faulty.append("f", bytes("def"));
    await expect(faulty.read("f")).rejects.toBeInstanceOf(SimulatedCrashError);
    let revived = false;
    const next = faulty.revive().then((s) => ((revived = true), s));
    await Promise.resolve();
    expect(revived).toBe(false);
    release();
    expect(await next).toBe(slow);
    await expect(first).rejects.toBeInstanceOf(SimulatedCrashError);
    await expect(second).rejects.toBeInstanceOf(SimulatedCrashError);
    expect(await text(inner, "f")).toBe("abcde");
  });

  it("revive without a crash stops the process cleanly and keeps everything it completed", async () => {
    const inner = new MemoryStorage();
    const faulty = new FaultyStorage(inner);
    await scenario(faulty);
    const next = await faulty.revive();
    expect(next).toBe(inner);
    expect(faulty.alive).toBe(false);
    expect(faulty.crash).toBeUndefined();
    await expect(faulty.read("s/meta.json")).rejects.toThrow(/stopped by revive/);
    expect(await text(next, "s/meta.json")).toBe('{"revision":2}');
    expect(await next.list("s")).toEqual(["messages", "meta.json"]);
  });

  it("rejects an invalid crashAt", () => {
    const inner = new MemoryStorage();
    for (const crashAt of [0, -1, 1.5, Number.NaN]) {
      expect(() => new FaultyStorage(inner, { crashAt })).toThrow(expect.objectContaining({ code: "invalid-input" }));
    }
  });
});

describe("enumerateCrashPoints", () => {
  it("returns one point per mutating operation, with the state the next process finds", async () => {
    const points = await enumerateCrashPoints(scenario, () => new MemoryStorage());
    expect(points.map((p) => p.k)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(points.every((p) => p.total === 6)).toBe(true);
    expect(points.map((p) => p.operation.name)).toEqual([
      "createExclusive",
      "replace",
      "append",
      "append",
      "replace",
      "remove",
    ]);
    for (const point of points) expect(point.error, `k=${point.k}`).toBeInstanceOf(SimulatedCrashError);
    const states = await Promise.all(
      points.map(async ({ inner }) => [
        await text(inner, "s/writer.lock"),
        await text(inner, "s/meta.json"),
        await text(inner, "s/messages/active.jsonl"),
      ]),
    );
    expect(states).toEqual([
      [undefined, undefined, undefined],
      ['{"pid":1}', undefined, undefined],
      ['{"pid":1}', '{"revision":1}', undefined],
      ['{"pid":1}', '{"revision":1}', '{"sequence":1}\n'],
      ['{"pid":1}', '{"revision":1}', '{"sequence":1}\n{"sequence":2}\n'],
      ['{"pid":1}', '{"revision":2}', '{"sequence":1}\n{"sequence":2}\n'],
    ]);
  });

  it("passes tornBytes to crashing appends only", async () => {
    const points = await enumerateCrashPoints(scenario, () => new MemoryStorage(), {
      tornBytes: (b) => b.length - 1,
    });
    expect(points.map((p) => p.tornBytes)).toEqual([0, 0, 14, 14, 0, 0]);
    expect(await text(points[3]!.inner, "s/messages/active.jsonl")).toBe('{"sequence":1}\n{"sequence":2}');
  });

  it("accepts an async makeInner and a scenario with no mutating operation", async () => {
    expect(await enumerateCrashPoints(async (s) => void (await s.list("")), async () => new MemoryStorage())).toEqual([]);
  });

  it("reports a scenario that swallows the crash with error undefined", async () => {
    const points = await enumerateCrashPoints(
      async (s) => {
        await s.replace("a", bytes("1")).catch(() => {});
      },
      () => new MemoryStorage(),
    );
    expect(points).toHaveLength(1);
    expect(points[0]!.error).toBeUndefined();
  });

  it("propagates a failure of the uncrashed run", async () => {
    await expect(
      enumerateCrashPoints(async () => {
        throw new Error("scenario broken");
      }, () => new MemoryStorage()),
    ).rejects.toThrow("scenario broken");
  });

  it("throws when the scenario is not deterministic", async () => {
    let run = 0;
    const fewer = async (s: StoragePort) => {
      const count = run++ === 0 ? 3 : 1;
      for (let i = 0; i < count; i++) await s.append("f", bytes("x"));
    };
    await expect(enumerateCrashPoints(fewer, () => new MemoryStorage())).rejects.toThrow(/not deterministic/);

    let flip = 0;
    const otherPath = async (s: StoragePort) => {
      await s.append(flip++ === 0 ? "f" : "g", bytes("x"));
    };
    await expect(enumerateCrashPoints(otherPath, () => new MemoryStorage())).rejects.toThrow(/not deterministic/);
  });
});
