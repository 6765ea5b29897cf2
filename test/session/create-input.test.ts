/**
 * What `create` and `importPortable` write into `meta.json` from a caller's input is checked
 * against what an open reads back (docs/FORMAT.md "The write limits are the read limits"):
 * a field of the wrong kind from plain JavaScript, or a document over the store's file limit,
 * is refused naming the field and what was found, and nothing is written. A document over the
 * store's file limit: test/node/limits.test.ts (this folder also runs on PostgreSQL).
 */
import { describe, expect, test } from "vitest";
import { InvalidIdError, InvalidInputError, MemoryStorage, Sessions } from "../../core/mod.ts";

/** A registry over a memory store (on PostgreSQL in that project). */
function registry(): { sessions: Sessions; storage: MemoryStorage } {
  const storage = new MemoryStorage();
  return { sessions: new Sessions({ storage }), storage };
}

/** Every file of the store (nothing may be left by a refused create). */
async function filesOf(storage: MemoryStorage, dir = "agents"): Promise<string[]> {
  const out: string[] = [];
  for (const name of await storage.list(dir)) {
    const path = `${dir}/${name}`;
    if ((await storage.read(path).catch(() => undefined)) !== undefined) out.push(path);
    else out.push(...(await filesOf(storage, path)));
  }
  return out;
}

const PLACE = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };

describe("create refuses what meta.json cannot hold, before anything is written", () => {
  const cases: Record<string, [input: Record<string, unknown>, message: RegExp]> = {
    "a title that is a number": [{ title: 5 }, /^create\(input\)\.title: found 5, which meta\.json cannot hold \(.*expected string/],
    "a title that is null": [{ title: null }, /^create\(input\)\.title: found null/],
    "a model label that is an object": [{ modelLabel: { name: "x" } }, /^create\(input\)\.modelLabel: found an object/],
    "a timezone that is an array": [{ timezone: ["Europe/Berlin"] }, /^create\(input\)\.timezone: found an array/],
    "an instruction that is a number": [{ instruction: 7 }, /^create\(input\)\.instruction: expected a string, found 7/],
    "a session id that is null": [{ sessionId: null }, /^create\(input\)\.sessionId: expected a string, found null/],
  };
  for (const [name, [extra, message]] of Object.entries(cases)) {
    test(name, async () => {
      const { sessions, storage } = registry();
      const error = await sessions.create({ ...PLACE, ...extra } as never).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidInputError);
      expect((error as Error).message).toMatch(message);
      expect(await filesOf(storage)).toEqual([]);
      expect(await sessions.list()).toEqual([]);
    });
  }

  test("no input at all, or not an object", async () => {
    const { sessions } = registry();
    await expect(sessions.create(undefined as never)).rejects.toThrow(/^create\(input\): expected an object \{ agentId, workspaceId, … \}, found nothing$/);
    await expect(sessions.create("a1/w1/s1" as never)).rejects.toBeInstanceOf(InvalidInputError);
    await expect(sessions.create({ agentId: 5, workspaceId: "w1" } as never)).rejects.toBeInstanceOf(InvalidIdError);
  });

  test("a session created with every field it takes opens clean and lists", async () => {
    const { sessions } = registry();
    await sessions.create({ ...PLACE, title: "t", modelLabel: "m", timezone: "Europe/Berlin", instruction: "Be brief." });
    const opened = await sessions.open("a1/w1/s1");
    expect(opened.diagnostics).toEqual([]);
    expect(opened.meta).toMatchObject({ title: "t", model_label: "m", timezone: "Europe/Berlin" });
    expect((await sessions.list()).map((m) => m.session_id)).toEqual(["s1"]);
  });
});

describe("importPortable refuses what meta.json cannot hold, and creates nothing", () => {
  const cases: Record<string, [portable: Record<string, unknown>, message: RegExp]> = {
    "a title that is a number": [{ title: 5 }, /^importPortable\(target, portable\)\.title: found 5/],
    "a createdAt that is not a time": [{ createdAt: "yesterday" }, /^importPortable\(target, portable\)\.createdAt: found "yesterday"/],
    "a provider without its model": [{ provider: { provider: "p", api: "a" } }, /^importPortable\(target, portable\)\.provider\.model: found nothing/],
    "metadata holding a BigInt": [{ metadata: { k: 1n } }, /^importPortable\(target, portable\): meta\.json cannot be written as JSON/],
    "no messages": [{ messages: undefined }, /^importPortable\(target, portable\)\.messages: expected an array, found nothing/],
  };
  for (const [name, [extra, message]] of Object.entries(cases)) {
    test(name, async () => {
      const { sessions, storage } = registry();
      const error = await sessions.importPortable("a1/w1/s1", { messages: [], ...extra } as never).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidInputError);
      expect((error as Error).message).toMatch(message);
      expect(await filesOf(storage)).toEqual([]);
    });
  }
});
