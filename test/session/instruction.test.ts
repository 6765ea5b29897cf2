/**
 * The system text: instruction.md when present, else generated from the agent's
 * instruction and plugins; snapshot() and regenerateSystem(). And the options that are refused.
 */
import { describe, expect, test } from "vitest";
import { afterMessages, atContextTokens, InvalidInputError, MemoryStorage, realUsage } from "../../core/mod.ts";
import { P, readText, REF, registry, rejection, snapshot, utf8 } from "../support/session.ts";
import { msgs, summarizer, writeSession } from "./support.ts";

const agent = {
  instruction: "You are a careful coder.",
  plugins: [{ name: "git", instruction: "Use git." }, { name: "tests", instruction: "Run the tests." }],
};
const generated = "You are a careful coder.\n\n## git\nUse git.\n\n## tests\nRun the tests.";
const identity = { provider: "openai", api: "responses", model: "gpt-5" };

describe("instruction.md", () => {
  test("create with an instruction writes instruction.md and the session's system is it", async () => {
    const storage = new MemoryStorage();
    const session = await registry(storage).create({ ...REF, instruction: "Fixed system." }, { agent });
    expect(await readText(storage, P.instruction)).toBe("Fixed system.");
    expect(session.system).toBe("Fixed system.");
    expect(session.compose(identity).input.system).toBe("Fixed system.");
    const reopened = await registry(storage).open(REF, { agent: { instruction: "something else" } });
    expect(reopened.system).toBe("Fixed system.");
  });

  test("without instruction.md the agent's instruction and plugins make the system; nothing is written", async () => {
    const storage = new MemoryStorage();
    const session = await registry(storage).create(REF, { agent });
    expect(await storage.read(P.instruction)).toBeUndefined();
    expect(session.system).toBe(generated);
    expect(session.compose(identity).input.system).toBe(generated);
    const none = await registry(storage).open(REF);
    expect(none.system).toBeNull();
  });

  test("snapshot() writes the system to instruction.md, which then wins over a changed agent", async () => {
    const storage = new MemoryStorage();
    const session = await registry(storage).create(REF, { agent });
    await session.snapshot();
    expect(await readText(storage, P.instruction)).toBe(generated);
    expect(session.revision).toBe(0);
    const reopened = await registry(storage).open(REF, { agent: { instruction: "new agent" } });
    expect(reopened.system).toBe(generated);
  });

  test("snapshot() without any system text is InvalidInputError, nothing written", async () => {
    const storage = new MemoryStorage();
    const session = await registry(storage).create(REF);
    const before = await snapshot(storage);
    await rejection(session.snapshot(), InvalidInputError, "invalid-input");
    expect(await snapshot(storage)).toEqual(before);
  });

  test("regenerateSystem() regenerates from the changed agent and overwrites instruction.md when it exists", async () => {
    const storage = new MemoryStorage();
    await registry(storage).create(REF, { agent });
    const changed = { instruction: "You are a careful coder.", plugins: [{ name: "git", instruction: "Use jj." }] };
    const session = await registry(storage).open(REF, { agent: changed });
    await storage.replace(P.instruction, utf8("old snapshot"));
    await session.reload();
    expect(session.system).toBe("old snapshot");
    await session.regenerateSystem();
    expect(session.system).toBe("You are a careful coder.\n\n## git\nUse jj.");
    expect(await readText(storage, P.instruction)).toBe("You are a careful coder.\n\n## git\nUse jj.");
  });

  test("regenerateSystem() regenerates in memory only when instruction.md is absent", async () => {
    const storage = new MemoryStorage();
    await registry(storage).create(REF, { agent });
    const session = await registry(storage).open(REF, { agent: { instruction: "changed" } });
    expect(session.system).toBe("changed");
    await session.regenerateSystem();
    expect(session.system).toBe("changed");
    expect(await storage.read(P.instruction)).toBeUndefined();
  });

  test("deleting instruction.md restores generation from the agent at the next open", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 2), instruction: "snap" });
    expect((await registry(storage).open(REF, { agent })).system).toBe("snap");
    await storage.remove(P.instruction);
    expect((await registry(storage).open(REF, { agent })).system).toBe(generated);
  });
});

describe("options", () => {
  test("an automatic policy without a summarizer is InvalidInputError at open and at create; create writes nothing", async () => {
    const storage = new MemoryStorage();
    await rejection(registry(storage).create(REF, { policy: afterMessages(3) }), InvalidInputError, "invalid-input");
    expect(await snapshot(storage)).toEqual({});
    await rejection(registry(storage).create(REF, { policy: atContextTokens(1000) }), InvalidInputError, "invalid-input");
    await writeSession(storage, { active: msgs(1, 2) });
    await rejection(registry(storage).open(REF, { policy: afterMessages(3) }), InvalidInputError, "invalid-input");
    await rejection(registry(storage, { policy: afterMessages(3) }).open(REF), InvalidInputError, "invalid-input");
    const ok = await registry(storage).open(REF, { policy: afterMessages(3), summarizer: summarizer() });
    expect(ok.options.policy).toEqual({ kind: "after-messages", messages: 3 });
  });

  test("refused options are the error even when the open's reads, sent before the options are resolved, fail", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 2) });
    let failedReads = 0;
    const failing = new Proxy(storage, {
      get: (target, key) => {
        if (key === "readMany") return () => (failedReads += 1, Promise.reject(new Error("the disk is gone")));
        const value = Reflect.get(target, key) as unknown;
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    // The failed read is dropped, not left unhandled (vitest fails the run on an unhandled rejection).
    await rejection(registry(failing).open(REF, { policy: afterMessages(3) }), InvalidInputError, "invalid-input");
    expect(failedReads).toBe(1);
  });

  test("real-usage without contextWindow is InvalidInputError", async () => {
    const storage = new MemoryStorage();
    await writeSession(storage, { active: msgs(1, 2) });
    await rejection(registry(storage).open(REF, { policy: realUsage(), summarizer: summarizer() }), InvalidInputError, "invalid-input");
    const ok = await registry(storage).open(REF, { summarizer: summarizer(), contextWindow: 200_000 });
    expect(ok.options.policy).toEqual({ kind: "real-usage", ratio: 0.95 });
    const manual = await registry(storage).open(REF, { summarizer: summarizer() });
    expect(manual.options.policy).toEqual({ kind: "manual" });
  });
});
