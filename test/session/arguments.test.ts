/**
 * Wrong types from plain JavaScript at the public API (core/schema/arguments.ts): no argument,
 * `null`, a string for a message, a message without parts, a BigInt in a message, a registry
 * without storage, a run without options or with tools that are not an array. Each is a typed
 * `SessionfoldError` (`InvalidInputError`, `InvalidIdError` for a ref) saying what was
 * expected and what was found, never a raw `TypeError` or an `internal` error wrapping one;
 * nothing is written and the session stays writable.
 */
import { describe, expect, test } from "vitest";
import { InvalidIdError, InvalidInputError, MemoryStorage, SessionfoldError, Sessions } from "../../core/mod.ts";
import { ScriptedProvider } from "../../testing/mod.ts";

async function setup() {
  const sessions = new Sessions({ storage: new MemoryStorage() });
  const session = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
  await session.append({ role: "user", parts: [{ type: "text", text: "hi" }] });
  return { sessions, session };
}

/** What `action` threw or rejected with (it must fail). */
async function failure(action: () => unknown): Promise<Error> {
  try {
    await action();
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a failure");
}

describe("the registry's arguments", () => {
  test("create() and open() with no argument", async () => {
    const { sessions } = await setup();
    expect(await failure(() => sessions.create(undefined as never))).toBeInstanceOf(InvalidInputError);
    const open = await failure(() => sessions.open(undefined as never));
    expect(open).toBeInstanceOf(InvalidIdError);
    expect(open.message).toMatch(/^invalid session reference \(nothing\): expected a SessionRef/);
    expect(await failure(() => sessions.open(null as never))).toBeInstanceOf(InvalidIdError);
    expect(await failure(() => sessions.delete(5 as never))).toBeInstanceOf(InvalidIdError);
    expect(await failure(() => sessions.list(null as never))).toMatchObject({ message: "list(options): expected an object, found null" });
    expect(await failure(() => sessions.fork("a1/w1/s1", "s2", "x" as never))).toBeInstanceOf(InvalidInputError);
  });

  test("new Sessions() and new Sessions({}) name the storage they lack", async () => {
    expect(await failure(() => new Sessions(undefined as never))).toMatchObject({
      message: "new Sessions(options): expected an object { storage, … }, found nothing",
    });
    const empty = await failure(() => new Sessions({} as never));
    expect(empty).toBeInstanceOf(InvalidInputError);
    expect(empty.message).toBe("new Sessions(options).storage: expected a StoragePort, found nothing");
    const partial = await failure(() => new Sessions({ storage: { read: () => undefined } } as never));
    expect(partial.message).toBe("new Sessions(options).storage.readTail: expected a function (a StoragePort), found nothing");
  });
});

describe("append's messages", () => {
  const cases: Record<string, [messages: unknown, message: RegExp]> = {
    null: [null, /^messages\[0\]: expected a message object \{ role, parts \}, found null$/],
    undefined: [undefined, /^messages\[0\]: expected a message object \{ role, parts \}, found nothing$/],
    "a string": ["hello", /^messages\[0\]: expected a message object \{ role, parts \}, found "hello"$/],
    "a string in a list": [[{ role: "user", parts: [] }, 5], /^messages\[1\]: expected a message object/],
    "a message without parts": [{ role: "user" }, /^messages\[0\]\.parts: .*expected array/],
    "a BigInt in a part": [
      { role: "user", parts: [{ type: "text", text: "x", n: 1n }] },
      /^messages\[0\]\.parts\.0\.n: expected a JSON value, found a bigint$/,
    ],
  };
  for (const [name, [messages, message]] of Object.entries(cases)) {
    test(name, async () => {
      const { session } = await setup();
      const error = await failure(() => session.append(messages as never));
      expect(error).toBeInstanceOf(InvalidInputError);
      expect(error.message).toMatch(message);
      expect(session.revision).toBe(1);
      expect((await session.append({ role: "user", parts: [{ type: "text", text: "ok" }] })).revision).toBe(2);
    });
  }

  test("a held session refuses the same, and its next commit goes through", async () => {
    const { sessions } = await setup();
    const held = await sessions.open("a1/w1/s1", { hold: true });
    expect(await failure(() => held.append({ role: "user", parts: [{ type: "text", text: "x", n: 1n }] } as never))).toBeInstanceOf(InvalidInputError);
    expect((await held.append({ role: "user", parts: [{ type: "text", text: "ok" }] })).sequences).toEqual([2]);
    await held.close();
  });
});

describe("run's arguments", () => {
  const provider = () => new ScriptedProvider([{ text: "a" }]);
  const cases: Record<string, [input: unknown, options: unknown, message: RegExp]> = {
    "null input": [null, { provider: provider() }, /^run\(input\): expected text, \{ parts \} or nothing, found null$/],
    "no options": ["hi", undefined, /^run\(input, options\): expected an object \{ provider, tools\?, signal\?, onEvent\? \}, found nothing$/],
    "a provider that is not one": ["hi", { provider: 5 }, /^run\(input, options\)\.provider: expected a Provider \{ identity, stream \}, found 5$/],
    "tools that are not an array": ["hi", { provider: provider(), tools: "x" }, /^run\(input, options\)\.tools: expected an array, found "x"$/],
    "an onEvent that is not a function": ["hi", { provider: provider(), onEvent: 1 }, /^run\(input, options\)\.onEvent: expected a function, found 1$/],
    "input without parts": [{}, { provider: provider() }, /^input\.parts: .*expected array/],
  };
  for (const [name, [input, options, message]] of Object.entries(cases)) {
    test(name, async () => {
      const { session } = await setup();
      const run = session.run(input as never, options as never);
      const error = await failure(async () => {
        for await (const _ of run);
      });
      expect(error).toBeInstanceOf(SessionfoldError);
      expect(error).toBeInstanceOf(InvalidInputError);
      expect(error.message).toMatch(message);
      expect(await run.result.catch((e: unknown) => e)).toBe(error);
      expect(session.revision).toBe(1);
    });
  }
});
