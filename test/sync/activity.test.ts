/**
 * A sync is not activity (docs/SYNC.md "Activity"): every session a sync writes keeps the
 * `updated_at` its source had, on the server and on a pulling device, plain and encrypted,
 * whole, in parts and appended, so each side lists the sessions in the source's order. The
 * source's clock is in 2020, the server's and the other device's years later: a time stamped
 * by the sync would show.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { EncryptedStorage, type KeyProvider, Sessions, type StoragePort } from "../../core/mod.ts";
import { createSyncHandler, directRemote, httpRemote, type SyncRemote, SyncServer, syncStores } from "../../core/sync/mod.ts";
import { type FetchServer, NodeFileStorage, serveFetchHandler } from "../../runtime-node/mod.ts";
import { newKeyring } from "./encrypted-pair.ts";
import { withCarried } from "../../core/sync/session-files.ts";
import type { MessageRecord, SessionMeta } from "../../core/mod.ts";
import { appendLater, listing, PARTS, sourceClock, steppingClock, writeSource } from "./activity-source.ts";

const dirs: string[] = [];
const servers: FetchServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function folderStore(): Promise<NodeFileStorage> {
  const dir = await mkdtemp(join(tmpdir(), "sessionfold-activity-"));
  dirs.push(dir);
  return new NodeFileStorage({ root: dir });
}

/** A sync server on loopback over `storage`, with `clock`. */
async function httpServer(storage: StoragePort, clock: () => number): Promise<SyncRemote> {
  const handler = createSyncHandler({ server: new SyncServer({ storage, clock }), authorize: () => ({ user: "u", may: () => true }), basePath: "/sync" });
  const server = await serveFetchHandler(handler);
  servers.push(server);
  return httpRemote({ url: `${server.url}/sync`, id: "server" });
}

describe("a sync keeps each session's updated_at as the source had it", () => {
  it("folder stores over a direct remote: whole, in parts and appended, on the server and on a pulling device; the same order", async () => {
    const { clock, tick } = sourceClock();
    const source = new Sessions({ storage: await folderStore(), clock });
    const serverStore = await folderStore();
    const server = new SyncServer({ storage: serverStore, clock: steppingClock("2030-01-01T00:00:00.000Z") });
    const device = new Sessions({ storage: await folderStore(), clock: steppingClock("2031-01-01T00:00:00.000Z") });
    const onServer = new Sessions({ storage: serverStore });
    await writeSource(source, tick);
    expect((await syncStores({ local: source, remote: directRemote(server), ...PARTS })).conflicts).toEqual([]);
    const expected = await listing(source);
    expect((await source.open("a1/w1/large")).meta.history_bytes).toBeGreaterThan(PARTS.batchBytes * 1.5); // sent in parts
    expect(expected.map(([ref]) => ref)).toEqual(["a1/w1/later", "a1/w1/large", "a1/w1/small"]);
    expect(await listing(onServer)).toEqual(expected);
    expect((await syncStores({ local: device, remote: directRemote(server), ...PARTS })).conflicts).toEqual([]);
    expect(await listing(device)).toEqual(expected);
    // Back online: appended on the source, pushed (the server's kept handle fast-forwards it), then pulled.
    await appendLater(source, tick);
    expect((await syncStores({ local: source, remote: directRemote(server), ...PARTS })).conflicts).toEqual([]);
    const after = await listing(source);
    expect(after[0]![0]).toBe("a1/w1/small");
    expect(await listing(onServer)).toEqual(after);
    expect((await syncStores({ local: device, remote: directRemote(server), ...PARTS })).conflicts).toEqual([]);
    expect(await listing(device)).toEqual(after);
    // Once more: this push continues the one before, through the handle the server kept (no open).
    await appendLater(source, tick);
    expect((await syncStores({ local: source, remote: directRemote(server), ...PARTS })).conflicts).toEqual([]);
    expect(await listing(onServer)).toEqual(await listing(source));
  });

  it("over HTTP on loopback: a session sent in parts and an append keep the source's times, the server's clock years later", async () => {
    const { clock, tick } = sourceClock();
    const source = new Sessions({ storage: await folderStore(), clock });
    const serverStore = await folderStore();
    const remote = await httpServer(serverStore, steppingClock("2030-01-01T00:00:00.000Z"));
    await writeSource(source, tick);
    expect((await syncStores({ local: source, remote, ...PARTS })).conflicts).toEqual([]);
    expect(await listing(new Sessions({ storage: serverStore }))).toEqual(await listing(source));
    await appendLater(source, tick);
    expect((await syncStores({ local: source, remote, ...PARTS })).conflicts).toEqual([]);
    expect(await listing(new Sessions({ storage: serverStore }))).toEqual(await listing(source));
  });

  it("encrypted sessions: a device pulling them from the server keeps the source's times, in parts and appended", async () => {
    const provider: KeyProvider = await newKeyring();
    const { clock, tick } = sourceClock();
    const source = new Sessions({ storage: await EncryptedStorage.create(await folderStore(), provider), clock });
    const server = new SyncServer({ storage: await folderStore(), clock: steppingClock("2030-01-01T00:00:00.000Z") });
    const device = new Sessions({ storage: await EncryptedStorage.create(await folderStore(), provider), clock: steppingClock("2031-01-01T00:00:00.000Z") });
    await writeSource(source, tick);
    expect((await syncStores({ local: source, remote: directRemote(server), ...PARTS })).conflicts).toEqual([]);
    expect((await syncStores({ local: device, remote: directRemote(server), ...PARTS })).conflicts).toEqual([]);
    expect(await listing(device)).toEqual(await listing(source));
    await appendLater(source, tick);
    expect((await syncStores({ local: source, remote: directRemote(server), ...PARTS })).conflicts).toEqual([]);
    expect((await syncStores({ local: device, remote: directRemote(server), ...PARTS })).conflicts).toEqual([]);
    expect(await listing(device)).toEqual(await listing(source));
  });

  for (const encrypted of [false, true]) {
    it(`an instruction changed on the source travels as labels and keeps every side's updated_at${encrypted ? " (encrypted)" : ""}`, async () => {
      const provider = await newKeyring();
      const store = async () => (encrypted ? EncryptedStorage.create(await folderStore(), provider) : folderStore());
      const { clock, tick } = sourceClock();
      const sourceStore = await store();
      const source = new Sessions({ storage: sourceStore, clock });
      const serverStore = await folderStore();
      const server = new SyncServer({ storage: serverStore, clock: steppingClock("2030-01-01T00:00:00.000Z") });
      const device = new Sessions({ storage: await store(), clock: steppingClock("2031-01-01T00:00:00.000Z") });
      await writeSource(source, tick);
      await syncStores({ local: source, remote: directRemote(server), ...PARTS });
      await syncStores({ local: device, remote: directRemote(server), ...PARTS });
      // A host edits the file: no commit, so the source's updated_at stays; the sync sends it as a label change.
      await sourceStore.replace("agents/a1/workspaces/w1/sessions/small/instruction.md", new TextEncoder().encode("Be brief."));
      expect((await syncStores({ local: source, remote: directRemote(server), ...PARTS })).conflicts).toEqual([]);
      if (!encrypted) expect(await listing(new Sessions({ storage: serverStore }))).toEqual(await listing(source));
      expect((await syncStores({ local: device, remote: directRemote(server), ...PARTS })).conflicts).toEqual([]);
      expect((await device.open("a1/w1/small")).system).toBe("Be brief.");
      expect(await listing(device)).toEqual(await listing(source));
    });
  }

  it("a host's own append after a sync is activity: its time now", async () => {
    const { clock, tick } = sourceClock();
    const source = new Sessions({ storage: await folderStore(), clock });
    const server = new SyncServer({ storage: await folderStore(), clock: steppingClock("2030-01-01T00:00:00.000Z") });
    const device = new Sessions({ storage: await folderStore(), clock: () => Date.parse("2031-06-01T00:00:00.000Z") });
    await writeSource(source, tick);
    await syncStores({ local: source, remote: directRemote(server), ...PARTS });
    await syncStores({ local: device, remote: directRemote(server), ...PARTS });
    const small = await device.open("a1/w1/small");
    await small.append({ role: "user", parts: [{ type: "text", text: "here" }] });
    expect(small.meta.updated_at).toBe("2031-06-01T00:00:00.000Z");
    expect((await listing(device))[0]).toEqual(["a1/w1/small", "2031-06-01T00:00:00.000Z"]);
  });

  it("a re-read that carries this store's newer messages onto the server's copy takes their time, not the copy's", () => {
    const copy = { meta: { revision: 3, updated_at: "2020-01-01T00:00:00.000Z" } as SessionMeta, instruction: null, segments: [], active: [] };
    const carried = [{ message_id: "m1", sequence: 9, created_at: "2020-01-02T00:00:00.000Z" } as MessageRecord];
    expect(withCarried(copy, carried, 5).meta).toMatchObject({ revision: 6, updated_at: "2020-01-02T00:00:00.000Z" });
    // Nothing carried, or only older messages: the copy's own time.
    expect(withCarried(copy, [], 5).meta.updated_at).toBe("2020-01-01T00:00:00.000Z");
  });
});
