/**
 * The sync API's option objects from plain JavaScript (docs/decisions.md "Unknown option fields are refused"): a field
 * `syncStores`, `httpRemote`, `directRemote`, `createSyncHandler`, `new SyncServer` or `startSyncScheduler` does not
 * know is an `InvalidInputError` naming it and the fields there are, before any request or write; and a handler with
 * neither `storage` nor `server` is one too (it was a raw `TypeError`).
 */
import { describe, expect, test } from "vitest";
import { invalidInput } from "../support/invalid-input.ts";
import { MemoryStorage, Sessions } from "../../core/mod.ts";
import { createSyncHandler, directRemote, httpRemote, startSyncScheduler, SyncServer, syncStores } from "../../core/sync/mod.ts";

describe("the sync API refuses a field it does not know", () => {
  test("syncStores: nothing is pushed", async () => {
    const local = new Sessions({ storage: new MemoryStorage() });
    const session = await local.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
    await session.append({ role: "user", parts: [{ type: "text", text: "hi" }] });
    const server = new MemoryStorage();
    const error = await invalidInput(() => syncStores({ local, remote: directRemote(server), ref: ["a1/w1/s1"] } as never));
    expect(error.message).toMatch(/^syncStores\(options\): unknown field "ref" \(did you mean "refs"\?\); the fields are local, remote, refs,/);
    expect(await new Sessions({ storage: server }).list()).toEqual([]);
    expect((await invalidInput(() => syncStores(undefined as never))).message).toBe("syncStores(options): expected an object, found nothing");
  });

  test("the remotes, the handler and the server", async () => {
    expect((await invalidInput(() => directRemote(new MemoryStorage(), { ID: "x" } as never))).message).toMatch(
      /^directRemote\(target, options\): unknown field "ID" \(did you mean "id"\?\); the fields are id, principal, clock$/,
    );
    expect((await invalidInput(() => httpRemote({ url: "http://127.0.0.1/sync", header: {} } as never))).message).toMatch(
      /^httpRemote\(options\): unknown field "header" \(did you mean "headers"\?\)/,
    );
    expect((await invalidInput(() => httpRemote({ uri: "http://127.0.0.1/sync" } as never))).message).toMatch(
      /^httpRemote\(options\): unknown field "uri" \(did you mean "url"\?\)/,
    );
    expect((await invalidInput(() => httpRemote({} as never))).message).toBe("httpRemote(options).url: expected a string, found nothing");
    const authorize = () => ({ user: "u", may: () => true });
    expect((await invalidInput(() => createSyncHandler({ storage: new MemoryStorage(), authorize, basepath: "/sync" } as never))).message).toMatch(
      /^createSyncHandler\(options\): unknown field "basepath" \(did you mean "basePath"\?\)/,
    );
    expect((await invalidInput(() => createSyncHandler({ authorize } as never))).message).toBe(
      "createSyncHandler(options).storage: expected a StoragePort (or give `server`), found nothing",
    );
    expect((await invalidInput(() => createSyncHandler({ storage: new MemoryStorage() } as never))).message).toBe(
      "createSyncHandler(options).authorize: expected a function, found nothing",
    );
    expect((await invalidInput(() => new SyncServer({ storage: new MemoryStorage(), pollMs: 5 } as never))).message).toMatch(
      /^new SyncServer\(options\): unknown field "pollMs"; the fields are storage, clock, identity, pollIntervalMs, sweepIntervalMs$/,
    );
  });

  test("startSyncScheduler: no sync starts", async () => {
    const local = new Sessions({ storage: new MemoryStorage() });
    const error = await invalidInput(() => startSyncScheduler({ local, remote: directRemote(new MemoryStorage()), interval: 0 } as never));
    expect(error.message).toMatch(/^startSyncScheduler\(options\): unknown field "interval" \(did you mean "intervalMs"\?\); the fields are local, remote,/);
  });
});
