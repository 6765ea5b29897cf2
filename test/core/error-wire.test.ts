/**
 * Every error class the core exports survives a real Comlink hop (a MessageChannel, as
 * between a host and its storage worker) with its class, code and details: the list is taken
 * from the module's exports, so a class added later is checked too.
 */
import { MessageChannel } from "node:worker_threads";
import * as Comlink from "comlink";
import nodeEndpoint from "comlink/dist/esm/node-adapter.mjs";
import { afterAll, describe, expect, it } from "vitest";
import * as core from "../../core/mod.ts";
import { registerErrorTransfer } from "../../core/internal.ts";

type ErrorClass = new (message: string, details: never) => core.SessionfoldError;

const CLASSES = (Object.entries(core) as [string, unknown][])
  .filter((entry): entry is [string, ErrorClass] =>
    typeof entry[1] === "function" && (entry[1] as { prototype?: unknown }).prototype instanceof core.SessionfoldError
  )
  .sort(([a], [b]) => a.localeCompare(b));

registerErrorTransfer(Comlink);
const channel = new MessageChannel();
const thrower = {
  throwIt(name: string, details: Record<string, unknown>): void {
    const Class = CLASSES.find(([n]) => n === name)![1];
    throw new Class(`a ${name} from the other side`, details as never);
  },
};
Comlink.expose(thrower, nodeEndpoint(channel.port1));
const remote = Comlink.wrap<typeof thrower>(nodeEndpoint(channel.port2));

afterAll(() => {
  channel.port1.close();
  channel.port2.close();
});

describe("typed errors on the wire", () => {
  it("finds the error classes of core, those of agent and formats included", () => {
    expect(CLASSES.map(([name]) => name)).toEqual(
      expect.arrayContaining(["AgentConfigError", "CorruptSessionError", "FormatError", "StoreEntryError", "StorageFullError"]),
    );
  });

  it.each(CLASSES)("%s crosses with its class, code and details", async (name, Class) => {
    const details = { file: "agents/a1/agent.jsonc", line: 4, column: 2, path: "x", format: "deepcode", found: "a", expected: "b" };
    const error = await remote.throwIt(name, details).then(
      () => undefined,
      (e: unknown) => e,
    );
    const original = new Class("x", details as never);
    expect(error).toBeInstanceOf(Class);
    expect(error).toMatchObject({ name, code: original.code, message: `a ${name} from the other side`, details });
  });
});
