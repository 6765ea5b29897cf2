/**
 * Crash points of a re-read (docs/SYNC.md "Re-reads"): a device whose copy of a session the
 * server's copy replaces (its tail forked on the server, or its segmentation refused) while
 * it holds messages the server has not acknowledged. The device's sync is killed at every
 * mutating storage call it makes (testing/faulty-storage.ts), the next process (another pid,
 * the dead one's locks taken over) opens the same store and syncs again: every message any
 * device wrote must then exist exactly once across the server's sessions and their forks,
 * every branch's sequences run 1..n, and the device holds what the server holds. Device
 * stores: memory, a folder, and an encrypted store over memory (the crash falls between its
 * backend's calls).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import {
  EncryptedStorage,
  ExtractiveSummarizer,
  MemoryStorage,
  type MessageRecord,
  type Session,
  Sessions,
  type StoragePort,
  type WriterIdentity,
} from "../../core/mod.ts";
import { directRemote, type SyncRemote, syncStores } from "../../core/sync/mod.ts";
import { NodeFileStorage } from "../../runtime-node/mod.ts";
import { FaultyStorage, SimulatedCrashError } from "../../testing/faulty-storage.ts";
import { testPrincipal } from "../../testing/sync-conformance.ts";
import { restoreStorage, snapshot } from "../support/session.ts";
import { keyHolderView, newKeyring } from "./encrypted-pair.ts";

const REF = "a1/shared/s1";
const text = (t: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text: t }] });
const reply = (t: string) => ({ role: "assistant" as const, parts: [{ type: "text" as const, text: t }] });

/** The crashed process and the next one: one host, one boot, another pid; the probe says the first is gone. */
const HOST = { hostname: "device-b", runtime: "node" as const, bootId: "boot-1", pidNamespace: "pid:[1]" };
const CRASHED: WriterIdentity = { pid: 101, ...HOST };
const NEXT: WriterIdentity = { pid: 202, ...HOST };
const probe = { processStartTime: (pid: number) => (pid === NEXT.pid ? Date.now() : null) };

/** What a scenario leaves before the sync that is crashed: the server's and device B's stores, and every message id written. */
interface Prepared {
  readonly server: Record<string, string>;
  readonly device: Record<string, string>;
  readonly written: readonly string[];
  /** Where the carried-over messages must end up: the fork or the session itself. */
  readonly carriedTo: "fork" | "session";
}

/** A new, empty device store of a kind (an encrypted one created under the test's key). */
async function newDevice(store: DeviceStore): Promise<StoragePort> {
  const backend = new MemoryStorage();
  return store.over === clear.over ? backend : EncryptedStorage.create(backend, provider);
}

/** What a device's files are on its backend (an encrypted store's as stored). */
function backendOf(storage: StoragePort): StoragePort {
  return storage instanceof EncryptedStorage ? storage.inner : storage;
}

function remoteOf(server: StoragePort, cutPull = false): SyncRemote {
  const remote = directRemote(server, { id: "server", principal: testPrincipal("alice") });
  if (!cutPull) return remote;
  return { ...remote, pull: () => Promise.reject(new TypeError("connection cut")) };
}

async function historyOf(session: Session): Promise<MessageRecord[]> {
  const out: MessageRecord[] = [];
  for (const range of await session.segments()) out.push(...(await session.readSegment(range)).messages);
  return [...out, ...session.active];
}

async function idsOf(sessions: Sessions, ref = REF): Promise<string[]> {
  return (await historyOf(await sessions.open(ref))).map((m) => m.message_id);
}

/**
 * B's tail (B3) forked on the server; the pull after that push cut, so B re-reads s1 on its
 * next run; meanwhile B wrote B4 after the forked tail: B4 is carried over to the fork.
 */
async function forkedTail(store: DeviceStore): Promise<Prepared> {
  const server = new MemoryStorage();
  const [a, b] = [new Sessions({ storage: await newDevice(store) }), new Sessions({ storage: await newDevice(store), identity: CRASHED })];
  const s = await a.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
  await s.append([text("one"), reply("two")]);
  await syncStores({ local: a, remote: remoteOf(server) });
  await syncStores({ local: b, remote: remoteOf(server) });
  await s.append(text("A3"));
  await syncStores({ local: a, remote: remoteOf(server) });
  await (await b.open(REF)).append(text("B3"));
  await expect(syncStores({ local: b, remote: remoteOf(server, true) })).rejects.toThrow("connection cut");
  await (await b.open(REF)).append(reply("B4, after the forked tail"));
  return preparedFrom(server, a, b, "fork");
}

/**
 * Both devices compacted differently; A's segmentation reached the server first, so B's
 * segment was refused (its messages b13, b14 taken); the pull after that push cut; meanwhile
 * B wrote b15: b15 is carried over into the server's copy of s1 itself.
 */
async function refusedSegmentation(store: DeviceStore): Promise<Prepared> {
  const server = new MemoryStorage();
  const [a, b] = [new Sessions({ storage: await newDevice(store) }), new Sessions({ storage: await newDevice(store), identity: CRASHED })];
  const s = await a.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
  for (let i = 0; i < 6; i++) await s.append([text(`q${i}`), reply(`a${i}`)]);
  await syncStores({ local: a, remote: remoteOf(server) });
  await syncStores({ local: b, remote: remoteOf(server) });
  await s.compact({ summarizer: new ExtractiveSummarizer() });
  const onB = await b.open(REF);
  await onB.append([text("b13"), reply("b14")]);
  await onB.compact({ summarizer: new ExtractiveSummarizer() });
  await syncStores({ local: a, remote: remoteOf(server) });
  await expect(syncStores({ local: b, remote: remoteOf(server, true) })).rejects.toThrow("connection cut");
  await (await b.open(REF)).append(text("b15, after the refused segment"));
  return preparedFrom(server, a, b, "session");
}

/** The stores as a scenario left them, and every message id of both devices. */
async function preparedFrom(server: StoragePort, a: Sessions, b: Sessions, carriedTo: Prepared["carriedTo"]): Promise<Prepared> {
  return { server: await snapshot(server), device: await snapshot(backendOf(b.storage)), written: [...(await idsOf(b)), ...(await idsOf(a))], carriedTo };
}

/**
 * A kind of device store: the backend holding `files` (what the crash is injected into, so an
 * encrypted store's crash falls between the backend's own calls), the store the engine is
 * given over it, and how a key holder reads the server's store.
 */
interface DeviceStore {
  backend(files: Record<string, string>): Promise<StoragePort>;
  over(backend: StoragePort): Promise<StoragePort>;
  serverView(server: StoragePort): Promise<StoragePort>;
}

const folders: string[] = [];
afterAll(async () => {
  for (const dir of folders) await rm(dir, { recursive: true, force: true });
});

const provider = await newKeyring();
const clear = { over: (backend: StoragePort) => Promise.resolve(backend), serverView: (server: StoragePort) => Promise.resolve(server) };
const STORES: Record<string, DeviceStore> = {
  memory: { backend: (files) => restoreStorage(files), ...clear },
  files: {
    backend: async (files) => {
      const dir = await mkdtemp(join(tmpdir(), "sessionfold-reread-"));
      folders.push(dir);
      const storage = new NodeFileStorage({ root: dir });
      for (const [path, binary] of Object.entries(files)) await storage.replace(path, Buffer.from(binary, "binary"));
      return storage;
    },
    ...clear,
  },
  "encrypted memory": {
    backend: (files) => restoreStorage(files),
    over: (backend) => EncryptedStorage.open(backend, provider),
    serverView: (server) => keyHolderView(server, provider),
  },
};

/** The invariants after the next process synced twice: every message written exactly once on the server, sequences 1..n, the device converged. */
async function expectNothingLost(server: StoragePort, device: Sessions, prepared: Prepared, label: string): Promise<void> {
  const onServer = new Sessions({ storage: server });
  const owners = new Map<string, string[]>();
  for (const meta of await onServer.list()) {
    const ref = `${meta.agent_id}/${meta.workspace_id}/${meta.session_id}`;
    const history = await historyOf(await onServer.open(ref));
    expect(history.map((m) => m.sequence), `${label}: ${ref}: sequences 1..n`).toEqual(history.map((_, i) => i + 1));
    for (const m of history.filter((m) => m.sequence > (meta.forked_from?.through_sequence ?? 0))) {
      owners.set(m.message_id, [...(owners.get(m.message_id) ?? []), ref]);
    }
  }
  for (const id of new Set(prepared.written)) {
    expect(owners.get(id), `${label}: message ${id}: exactly once across the sessions and their forks`).toHaveLength(1);
  }
  for (const [id, refs] of owners) expect(refs, `${label}: message ${id}`).toHaveLength(1);
  const theirs = (await onServer.list()).map((m) => `${m.agent_id}/${m.workspace_id}/${m.session_id}`).sort();
  expect((await device.list()).map((m) => `${m.agent_id}/${m.workspace_id}/${m.session_id}`).sort(), `${label}: the device lists what the server lists`)
    .toEqual(theirs);
  for (const ref of theirs) expect(await idsOf(device, ref), `${label}: ${ref}: the device converged`).toEqual(await idsOf(onServer, ref));
  if (prepared.carriedTo === "fork") expect(theirs, `${label}: the fork exists`).toHaveLength(2);
}

describe.each(Object.keys(STORES))("a re-read killed at every storage call (device store: %s)", (storeName) => {
  const store = STORES[storeName]!;
  test.each([["a forked tail, a message after it", forkedTail], ["a refused segmentation, a message after it", refusedSegmentation]] as const)(
    "%s",
    async (_title, prepare) => {
      const prepared = await prepare(store);
      // The uncrashed run: how many mutating calls the device makes, and that it ends as it should.
      const baseline = new FaultyStorage(await store.backend(prepared.device));
      const baselineServer = await restoreStorage(prepared.server);
      const report = await syncStores({
        local: new Sessions({ storage: await store.over(baseline), identity: CRASHED }),
        remote: remoteOf(baselineServer),
        identity: CRASHED,
      });
      expect(report.reread, "the run re-reads s1").toEqual([REF]);
      const total = (await baseline.revive(), baseline.log.length);
      await expectNothingLost(await store.serverView(baselineServer), new Sessions({ storage: await store.over(baseline.inner) }), prepared, "no crash");
      expect(total).toBeGreaterThan(5);
      if (process.env["REREAD_LOG"]) {
        console.log(
          baseline.log.map((op) =>
            `${op.k} ${op.name} ${op.path.replace("agents/a1/workspaces/shared/", "")}${op.to ? ` → ${op.to.replace("agents/a1/workspaces/shared/", "")}` : ""}`
          ).join("\n"),
        );
      }

      const failures: string[] = [];
      for (let k = 1; k <= total; k++) {
        const server = await restoreStorage(prepared.server);
        const faulty = new FaultyStorage(await store.backend(prepared.device), { crashAt: k });
        const error = await syncStores({
          local: new Sessions({ storage: await store.over(faulty), identity: CRASHED }),
          remote: remoteOf(server),
          identity: CRASHED,
        }).then(
          () => undefined,
          (e: unknown) => e,
        );
        const crashed = faulty.crash?.operation;
        const label = `crash at ${k} of ${total} (${crashed?.name} ${crashed?.path}${crashed?.to ? ` → ${crashed.to}` : ""})`;
        if (error !== undefined) expect(error, label).toBeInstanceOf(SimulatedCrashError);
        // The next process: another pid on the same host, which takes over the dead one's locks.
        const next = new Sessions({ storage: await store.over(await faulty.revive()), identity: NEXT, probe });
        try {
          for (let round = 0; round < 2; round++) await syncStores({ local: next, remote: remoteOf(server), identity: NEXT });
          await expectNothingLost(await store.serverView(server), next, prepared, label);
        } catch (failure) {
          failures.push(failure instanceof Error ? failure.message.split("\n")[0]! : String(failure));
        }
      }
      // Every crash point is run, and every one that lost or doubled something is named.
      expect(failures).toEqual([]);
    },
  );
});
