/**
 * The conformance suite of sync (docs/SYNC.md): every pair a user can combine (two stores
 * directly, a store and a sync server over HTTP, on any backend) runs the same cases, in the
 * style of automerge-repo's and LiveStore's transport suites. A test file calls
 * {@linkcode runSyncTests} once per pair with a setup function; each test gets a fresh,
 * empty server store and fresh devices from it.
 *
 * After every case the invariants hold: every message id the server acknowledged exists
 * exactly once across the session and its forks (a fork's own messages being those after
 * its `forked_from.through_sequence`), each branch's sequences run 1..n without a gap, and
 * after a final sync every device holds what the server holds.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * import { directRemote } from "sessionfold/sync";
 * import { runSyncTests, testPrincipal } from "sessionfold/testing/sync-conformance";
 *
 * runSyncTests("memory ↔ memory", () => {
 *   const server = new MemoryStorage();
 *   return { server, newDevice: () => new MemoryStorage(), remote: (user) => directRemote(server, { id: "server", principal: testPrincipal(user ?? "nobody") }) };
 * });
 * ```
 * @module
 */
import { describe, expect, it } from "vitest";
import { ExtractiveSummarizer, type MessageRecord, type Session, Sessions, StorageError, type StoragePort, type StoragePort as Store } from "../core/mod.ts";
import { type Mutation, SYNC_PROTOCOL_VERSION, type SyncPrincipal, SyncRefusedError, type SyncRemote, type SyncReport, syncStores } from "../core/sync/mod.ts";
import { type SyncFaultKind, SyncFaults } from "./sync-faults.ts";

/** What a setup function hands to {@linkcode runSyncTests}. */
export interface SyncTestTarget {
  /** The server's store, empty. */
  readonly server: StoragePort;
  /** A fresh, empty store for one more device. */
  newDevice(): StoragePort | Promise<StoragePort>;
  /**
   * The remote as `user` reaches it ({@linkcode testPrincipal} says what each user may).
   * `null`: a request without credentials, which an HTTP server answers with 401 (a direct
   * remote has no credentials to check: leave `unauthenticated` false).
   */
  remote(user: string | null): SyncRemote;
  /** Whether `remote(null)` is refused with 401 (a server that authenticates). */
  readonly unauthenticated?: boolean;
  /**
   * The server's store as the invariants read it. An encrypted pair (devices on encrypted
   * stores, docs/SYNC.md "End-to-end encrypted sessions") gives the server's store opened with
   * the key-encryption key, which the server itself never has; default `server`.
   */
  readonly serverView?: StoragePort;
  /**
   * The fault script the server's fetch handler is wrapped with ({@linkcode SyncFaults.wrap}),
   * for a target over HTTP. Without it the suite applies its faults to each device's remote
   * in process ({@linkcode SyncFaults.wrapRemote}), and the cases that cut bodies are skipped.
   */
  readonly faults?: SyncFaults;
  /**
   * Restarts the server on the same store, cutting the connections open (a request held by a
   * fault included); the remotes' URL stays valid. Without it, a restart is a new server
   * instance over the store for every device (a remote in process).
   */
  restart?(): Promise<void>;
  /** Runs after each test: close servers, remove folders. */
  teardown?(): Promise<void> | void;
}

/** Counts of one case: messages the server acknowledged, found on the server, and in forks; requests that met an injected fault. */
export interface SyncCaseCounts {
  readonly acknowledged: number;
  readonly found: number;
  readonly forked: number;
  readonly faults: number;
}

/** Options of {@linkcode runSyncTests}. */
export interface SyncTestOptions {
  /** Told the counts of each case once its invariants held (for a matrix in a report). */
  readonly onCase?: (name: string, counts: SyncCaseCounts) => void;
  /**
   * The pair's devices are encrypted: the two cases that push a hand-made plaintext mutation
   * (a repeated and a concurrent duplicate) are left out, since the server refuses plaintext
   * into an encrypted session (`encryption-mismatch`, tested on its own).
   */
  readonly encrypted?: boolean;
}

/**
 * What user `user` may do in the suite: read and write the workspaces `shared` and
 * `w-<user>`, nothing else. A target's `authorize` hook maps credentials to this.
 *
 * @example
 * ```ts
 * testPrincipal("alice").may("write", { agentId: "a1", workspaceId: "w-alice" }); // true
 * testPrincipal("bob").may("read", { agentId: "a1", workspaceId: "w-alice" }); // false
 * ```
 */
export function testPrincipal(user: string): SyncPrincipal {
  return { user, may: (_access, place) => place.workspaceId === "shared" || place.workspaceId === `w-${user}` };
}

/** A device: its store, its sessions, its remote, and the message ids the server acknowledged to it. */
interface Device {
  readonly user: string;
  readonly storage: StoragePort;
  /** Replaced by a reload: a new `Sessions` over the same store. */
  sessions: Sessions;
  remote: SyncRemote;
  readonly acknowledged: Set<string>;
}

/** What a test body gets. */
interface Harness {
  readonly target: SyncTestTarget;
  readonly server: Sessions;
  device(user?: string): Promise<Device>;
  sync(device: Device, options?: { batchMessages?: number; batchMutations?: number; batchBytes?: number; signal?: AbortSignal }): Promise<SyncReport>;
  readonly devices: Device[];
  /** Message ids of a session deleted on purpose: no longer expected anywhere. */
  readonly forgotten: Set<string>;
  /** Message ids a test wrote on a device: each must end up on the server exactly once. */
  readonly written: Set<string>;
  /** The fault script between the devices and the server. */
  readonly faults: SyncFaults;
  /** Restarts the server (see {@linkcode SyncTestTarget.restart}). */
  restart(): Promise<void>;
  /** Skips the rest of the case (it does not apply to this target), saying why. */
  skip(reason: string): never;
}

const REF = "a1/shared/s1";

const text = (t: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text: t }] });
const reply = (t: string) => ({ role: "assistant" as const, parts: [{ type: "text" as const, text: t }] });

/**
 * Registers the sync cases for one pair.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * import { directRemote } from "sessionfold/sync";
 *
 * runSyncTests("memory ↔ memory", () => {
 *   const server = new MemoryStorage();
 *   return { server, newDevice: () => new MemoryStorage(), remote: (user) => directRemote(server, { id: "server", principal: testPrincipal(user ?? "nobody") }) };
 * });
 * ```
 */
export function runSyncTests(name: string, setup: () => SyncTestTarget | Promise<SyncTestTarget>, options: SyncTestOptions = {}): void {
  const encrypted = options.encrypted ?? false;
  const test = (title: string, body: (h: Harness) => Promise<void>, plaintextOnly = false) =>
    it.skipIf(plaintextOnly && encrypted)(title, async (context) => {
      const target = await setup();
      const devices: Device[] = [];
      const faults = target.faults ?? new SyncFaults();
      const remoteOf = (user: string) => (target.faults ? target.remote(user) : faults.wrapRemote(target.remote(user)));
      const harness: Harness = {
        target,
        server: new Sessions({ storage: target.serverView ?? target.server }),
        devices,
        forgotten: new Set(),
        written: new Set(),
        faults,
        async restart() {
          if (target.restart) return target.restart();
          faults.dropHeld();
          for (const device of devices) device.remote = remoteOf(device.user);
        },
        skip: (reason) => context.skip(reason) as never,
        async device(user = "alice") {
          const storage = await target.newDevice();
          const device: Device = { user, storage, sessions: new Sessions({ storage }), remote: remoteOf(user), acknowledged: new Set() };
          devices.push(device);
          return device;
        },
        async sync(device, batches = {}) {
          const report = await syncStores({ local: device.sessions, remote: device.remote, ...batches });
          for (const id of report.acknowledged) device.acknowledged.add(id);
          return report;
        },
      };
      try {
        await body(harness);
        faults.clear();
        const counts = await checkInvariants(harness);
        options.onCase?.(title, counts);
      } finally {
        await target.teardown?.();
      }
    });

  describe(`sync conformance: ${name}`, () => {
    test("initial push: a new session with its instruction, title and messages reaches the server", async (h) => {
      const a = await h.device();
      const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1", title: "Port to Deno", instruction: "Be brief." });
      await s.append([text("one"), reply("two"), text("three")]);
      const report = await h.sync(a);
      expect(report.pushed).toBe(3);
      const there = await h.server.open(REF);
      expect(await ids(there)).toEqual(s.active.map((m) => m.message_id));
      expect(there.meta.title).toBe("Port to Deno");
      expect(there.system).toBe("Be brief.");
    });

    test("pull to a fresh device: segments by name, Active, meta and instruction", async (h) => {
      const a = await h.device();
      const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1", title: "t", instruction: "i" });
      for (let i = 0; i < 6; i++) await s.append([text(`q${i}`), reply(`a${i}`)]);
      await s.compact({ summarizer: new ExtractiveSummarizer() });
      await s.append(text("after the compaction"));
      await h.sync(a);
      const b = await h.device();
      const report = await h.sync(b);
      expect(report.pulled).toBe(13);
      const copy = await b.sessions.open(REF);
      expect(await ids(copy)).toEqual(await ids(s));
      expect((await copy.segments()).map(rangeName)).toEqual((await s.segments()).map(rangeName));
      expect(copy.summary?.text).toBe(s.summary?.text);
      expect(copy.meta.title).toBe("t");
      expect(copy.system).toBe("i");
    });

    test("incremental: only the new messages travel, both ways", async (h) => {
      const { a, b, s } = await twoDevicesSharing(h);
      await s.append(text("three"));
      expect((await h.sync(a)).pushed).toBe(1);
      expect((await h.sync(b)).pulled).toBe(1);
      const onB = await b.sessions.open(REF);
      await onB.append(reply("four"));
      expect((await h.sync(b)).pushed).toBe(1);
      const back = await h.sync(a);
      expect(back.pulled).toBe(1);
      expect(back.pushed).toBe(0);
      const again = await h.sync(a);
      expect([again.pushed, again.pulled]).toEqual([0, 0]);
    });

    test("labels and instruction changed by another tool travel to the other devices", async (h) => {
      const a = await h.device();
      const b = await h.device();
      await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1", title: "first", instruction: "one" });
      await h.sync(a);
      await h.sync(b);
      // A third-party writer (docs/FORMAT.md): a new meta.json with a new revision, a new instruction.md.
      const before = await a.sessions.open(REF);
      await a.storage.replace(before.paths.instruction, new TextEncoder().encode("two"));
      await a.storage.replace(before.paths.meta, new TextEncoder().encode(JSON.stringify({ ...before.meta, title: "second", revision: before.revision + 1 })));
      await h.sync(a);
      expect((await h.server.open(REF)).meta.title).toBe("second");
      await h.sync(b);
      const onB = await b.sessions.open(REF);
      expect([onB.meta.title, onB.system]).toEqual(["second", "two"]);
    });

    test("a repeated push is acknowledged as a duplicate and applied once", async (h) => {
      const a = await h.device();
      const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
      await h.sync(a);
      await s.append(text("one"));
      const push = { v: SYNC_PROTOCOL_VERSION, client_id: "client-dup", mutations: [appendOf(s, 0)] };
      const first = await a.remote.push(push);
      const second = await a.remote.push(push);
      expect(first.results.map((r) => r.status)).toEqual(["applied"]);
      expect(second.results.map((r) => r.status)).toEqual(["duplicate"]);
      expect(second.results[0]!.result?.status).toBe("applied");
      expect(await ids(await h.server.open(REF))).toEqual([s.active[0]!.message_id]);
      a.acknowledged.add(s.active[0]!.message_id);
      await h.sync(a);
    }, true);

    test("a gap in mutation numbers is refused with 409 and the number expected; nothing applied", async (h) => {
      const a = await h.device();
      const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
      await h.sync(a);
      await s.append(text("one"));
      const refusal = await a.remote.push({ v: SYNC_PROTOCOL_VERSION, client_id: "client-gap", mutations: [{ ...appendOf(s, 0), number: 2 }] }).catch((
        e: unknown,
      ) => e);
      expect(refusal).toBeInstanceOf(SyncRefusedError);
      expect((refusal as SyncRefusedError).reason).toBe("mutation-gap");
      expect((refusal as SyncRefusedError).status).toBe(409);
      expect((refusal as SyncRefusedError).details.expected).toBe(1);
      expect(await ids(await h.server.open(REF))).toEqual([]);
      await h.sync(a);
    });

    test("a response lost after the commit: the retry applies nothing twice", async (h) => {
      const a = await h.device();
      const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
      await s.append([text("one"), reply("two")]);
      a.remote = losingNextPushAnswer(a.remote);
      await expect(h.sync(a)).rejects.toThrow("connection reset");
      expect(await ids(await h.server.open(REF))).toEqual(s.active.map((m) => m.message_id));
      const retry = await h.sync(a);
      expect(retry.pushed).toBe(0);
      expect(retry.acknowledged).toEqual(s.active.map((m) => m.message_id));
      expect(await ids(await h.server.open(REF))).toEqual(s.active.map((m) => m.message_id));
    });

    for (const order of ["A then B", "B then A"] as const) {
      test(`two devices write offline after the same sequence, ${order} reconnects first: a fork, reported, the same on retry`, async (h) => {
        const { a, b, s } = await twoDevicesSharing(h);
        await s.append([text("A3"), reply("A4")]);
        await (await b.sessions.open(REF)).append([text("B3"), reply("B4"), text("B5")]);
        const [first, second] = order === "A then B" ? [a, b] : [b, a];
        const firstTail = await idsAfter(first, 2);
        const secondTail = await idsAfter(second, 2);
        expect((await h.sync(first)).forks).toEqual([]);
        // The second device's push: its answer lost once, so the retry must find the same fork.
        second.remote = losingNextPushAnswer(second.remote);
        await expect(h.sync(second)).rejects.toThrow("connection reset");
        const report = await h.sync(second);
        expect(report.forks).toHaveLength(1);
        const fork = report.forks[0]!;
        expect(fork.ref).toBe(REF);
        expect(fork.at_sequence).toBe(2);
        const main = await h.server.open(REF);
        expect(await idsAfterIn(main, 2)).toEqual(firstTail);
        const forked = await h.server.open(fork.forked_as);
        expect(forked.meta.forked_from).toEqual({ session_id: "s1", through_sequence: 2 });
        expect(await idsAfterIn(forked, 2)).toEqual(secondTail);
        expect(await h.server.list({ agentId: "a1", workspaceId: "shared" })).toHaveLength(2);
        // The second device now holds the server's session and the fork.
        expect(await ids(await second.sessions.open(REF))).toEqual(await ids(main));
        expect(await ids(await second.sessions.open(fork.forked_as))).toEqual(await ids(forked));
      });
    }

    test("a compaction on one device reaches the server and the other devices as the same segment", async (h) => {
      const a = await h.device();
      const b = await h.device();
      const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
      for (let i = 0; i < 5; i++) await s.append([text(`q${i}`), reply(`a${i}`)]);
      await h.sync(a);
      await h.sync(b);
      await s.compact({ summarizer: new ExtractiveSummarizer() });
      const report = await h.sync(a);
      expect(report.reread).toEqual([]);
      expect((await (await h.server.open(REF)).segments()).map(rangeName)).toEqual((await s.segments()).map(rangeName));
      expect((await h.sync(b)).reread).toEqual([]);
      const onB = await b.sessions.open(REF);
      expect(onB.summary?.text).toBe(s.summary?.text);
      expect(onB.active.map((m) => m.message_id)).toEqual(s.active.map((m) => m.message_id));
    });

    test("two devices compact differently: the server's segmentation wins and the other device re-reads it", async (h) => {
      const a = await h.device();
      const b = await h.device();
      const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
      for (let i = 0; i < 6; i++) await s.append([text(`q${i}`), reply(`a${i}`)]);
      await h.sync(a);
      await h.sync(b);
      await s.compact({ summarizer: new ExtractiveSummarizer() });
      const onB = await b.sessions.open(REF);
      await onB.append([text("b13"), reply("b14")]);
      await onB.compact({ summarizer: new ExtractiveSummarizer() });
      await h.sync(a);
      const report = await h.sync(b);
      expect(report.reread).toEqual([REF]);
      expect(report.pushed).toBe(2);
      const server = await h.server.open(REF);
      expect((await server.segments()).map(rangeName)).toEqual((await s.segments()).map(rangeName));
      const again = await b.sessions.open(REF);
      expect((await again.segments()).map(rangeName)).toEqual((await s.segments()).map(rangeName));
      expect((await ids(again)).length).toBe(14);
    });

    test("batches: a long session goes in several pushes and reads, and an interrupted push resumes", async (h) => {
      const a = await h.device();
      const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
      await h.sync(a);
      for (let i = 0; i < 15; i++) await s.append([text(`q${i}`), reply(`a${i}`)]);
      const real = a.remote;
      let pushes = 0;
      a.remote = {
        ...real,
        push: (request) => {
          if (++pushes === 2) return Promise.reject(new Error("network down before the request left"));
          return real.push(request);
        },
      };
      await expect(h.sync(a, { batchMessages: 4, batchMutations: 2 })).rejects.toThrow("network down");
      const partly = await ids(await h.server.open(REF));
      expect(partly.length).toBe(8);
      const report = await h.sync(a, { batchMessages: 4, batchMutations: 2 });
      expect(report.pushed).toBe(22);
      const b = await h.device();
      expect((await h.sync(b, { batchMessages: 7 })).pulled).toBe(30);
    });

    test("a new session larger than a request travels in parts: its first segments, the others whole, then Active", async (h) => {
      const a = await h.device();
      const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1", title: "long" });
      for (let round = 0; round < 3; round++) {
        for (let i = 0; i < 6; i++) await s.append([text(`q${round}.${i}`), reply(`a${round}.${i}`)]);
        await s.compact({ summarizer: new ExtractiveSummarizer() });
      }
      await s.append([text("after"), reply("the compactions")]);
      const report = await h.sync(a, { batchBytes: 4096, batchMessages: 3 });
      expect(report.pushed).toBe((await ids(s)).length);
      const there = await h.server.open(REF);
      expect(await ids(there)).toEqual(await ids(s));
      expect((await there.segments()).map(String)).toEqual((await s.segments()).map(String));
      expect(there.meta.message_count).toBe((await ids(s)).length);
      expect((await h.sync(a)).pushed).toBe(0);
      const b = await h.device();
      await h.sync(b);
      expect(await ids(await b.sessions.open(REF))).toEqual(await ids(s));
    });

    test("a concurrent duplicate push applies once", async (h) => {
      const a = await h.device();
      const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
      await h.sync(a);
      await s.append([text("one"), reply("two")]);
      const push = { v: SYNC_PROTOCOL_VERSION, client_id: "client-concurrent", mutations: [appendOf(s, 0)] };
      const outcomes = await Promise.allSettled([a.remote.push(push), a.remote.push(push)]);
      for (const outcome of outcomes) {
        // Two server instances may race: the loser is told to push again (409), never applied twice.
        if (outcome.status === "rejected") expect((outcome.reason as SyncRefusedError).reason).toBe("session-busy");
        else expect(["applied", "duplicate"]).toContain(outcome.value.results[0]!.status);
      }
      expect(outcomes.some((o) => o.status === "fulfilled" && o.value.results[0]!.status === "applied")).toBe(true);
      expect(await ids(await h.server.open(REF))).toEqual(s.active.map((m) => m.message_id));
    }, true);

    test("a server restored from an older backup: the client pushes again and nothing is lost", async (h) => {
      const a = await h.device();
      const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
      await s.append([text("one"), reply("two")]);
      await h.sync(a);
      const backup = await snapshot(h.target.server);
      await s.append([text("three"), reply("four")]);
      await h.sync(a);
      await restore(h.target.server, backup);
      expect((await ids(await h.server.open(REF))).length).toBe(2);
      await s.append(text("five"));
      const report = await h.sync(a);
      expect(report.conflicts).toEqual([]);
      expect(await ids(await h.server.open(REF))).toEqual(await ids(s));
    });

    test("a long-poll pull answers when another device pushes", async (h) => {
      const a = await h.device();
      const b = await h.device();
      await h.sync(b);
      const { cursor } = await b.remote.pull({ v: SYNC_PROTOCOL_VERSION });
      const waiting = b.remote.pull({ v: SYNC_PROTOCOL_VERSION, cursor, wait_ms: 30_000 });
      await (await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" })).append(text("live"));
      await h.sync(a);
      const { sessions } = await waiting;
      expect(sessions.map((head) => head.ref)).toEqual([REF]);
      expect(sessions[0]!.last_sequence).toBe(1);
    });

    // Four seeds here; 300 more passed while the suite was written (docs/SYNC.md "Tests").
    for (const run of [0, 1, 2, 3]) {
      test(`randomized: three devices, offline windows, lost answers, compactions (seed ${run})`, async (h) => {
        let seed = 20261204 + run * 7919;
        const random = (n: number) => {
          seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
          return seed % n;
        };
        const devices = [await h.device(), await h.device(), await h.device()];
        await devices[0]!.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
        for (let step = 0; step < 40; step++) {
          const device = devices[random(devices.length)]!;
          const refs = (await device.sessions.list()).map((m) => `${m.agent_id}/${m.workspace_id}/${m.session_id}`).sort();
          const action = random(10);
          if (action < 6 && refs.length > 0) {
            await writeAtRandom(h, device, refs, action < 5 ? "append" : "compact", step, random);
          } else if (action < 8) {
            await h.sync(device);
          } else {
            // The answer to this sync's first push is lost after the server committed it.
            const real = device.remote;
            device.remote = losingNextPushAnswer(real);
            await h.sync(device).catch((error: unknown) => expect(String(error)).toMatch(/connection reset/));
            device.remote = real;
          }
        }
      });
    }

    test("a long offline tail forked in several batches goes to one fork", async (h) => {
      const { a, b, s } = await twoDevicesSharing(h);
      await s.append(text("A3"));
      await h.sync(a);
      const onB = await b.sessions.open(REF);
      for (let i = 3; i <= 9; i++) await onB.append(i % 2 ? text(`B${i}`) : reply(`B${i}`));
      const tail = await idsAfter(b, 2);
      const report = await h.sync(b, { batchMessages: 2, batchMutations: 2 });
      expect(report.forks).toHaveLength(1);
      expect(await idsAfterIn(await h.server.open(report.forks[0]!.forked_as), 2)).toEqual(tail);
      expect(await h.server.list()).toHaveLength(2);
    });

    test("403: another user's workspace is refused and nothing changes; a spoofed client id is refused", async (h) => {
      const alice = await h.device("alice");
      const s = await alice.sessions.create({ agentId: "a1", workspaceId: "w-alice", sessionId: "s1" });
      await s.append(text("private"));
      await h.sync(alice);
      const bob = await h.device("bob");
      const report = await h.sync(bob);
      expect(report.pulled).toBe(0);
      expect(await bob.sessions.list()).toEqual([]);
      const read = await bob.remote.read({ v: SYNC_PROTOCOL_VERSION, ref: "a1/w-alice/s1", after_sequence: 0 }).catch((e: unknown) => e);
      expect((read as SyncRefusedError).status).toBe(403);
      const mallory = await bob.sessions.create({ agentId: "a1", workspaceId: "w-alice", sessionId: "s1" });
      await mallory.append(text("written by bob"));
      const write = await bob.remote.push({ v: SYNC_PROTOCOL_VERSION, client_id: "client-bob", mutations: [appendOf(mallory, 0)] }).catch((e: unknown) => e);
      expect((write as SyncRefusedError).status).toBe(403);
      expect((write as SyncRefusedError).reason).toBe("forbidden");
      // Alice's client id, sent by Bob.
      const aliceClient = await clientIdOf(alice);
      const spoofed = await bob.remote.push({ v: SYNC_PROTOCOL_VERSION, client_id: aliceClient, mutations: [] }).catch((e: unknown) => e);
      expect((spoofed as SyncRefusedError).status).toBe(403);
      expect((spoofed as SyncRefusedError).reason).toBe("client-id-taken");
      expect(await ids(await h.server.open("a1/w-alice/s1"))).toEqual(s.active.map((m) => m.message_id));
      await bob.sessions.delete("a1/w-alice/s1");
      h.devices.splice(h.devices.indexOf(bob), 1);
      if (h.target.unauthenticated) {
        const nobody = h.target.remote(null);
        const refused = await nobody.pull({ v: SYNC_PROTOCOL_VERSION }).catch((e: unknown) => e);
        expect((refused as SyncRefusedError).status).toBe(401);
        expect((refused as SyncRefusedError).code).toBe("unauthorized");
      }
    });

    test("archive and delete travel as tombstones", async (h) => {
      const a = await h.device();
      const b = await h.device();
      await (await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" })).append(text("one"));
      await (await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s2" })).append(text("two"));
      await h.sync(a);
      await h.sync(b);
      await a.sessions.archive(REF);
      for (const id of await ids(await a.sessions.open("a1/shared/s2"))) h.forgotten.add(id);
      await a.sessions.delete("a1/shared/s2");
      await h.sync(a);
      await h.sync(b);
      expect((await b.sessions.list()).map((m) => m.session_id)).toEqual([]);
      expect((await b.sessions.list({ archived: true })).map((m) => m.session_id)).toEqual(["s1"]);
      expect((await h.server.list()).map((m) => m.session_id)).toEqual([]);
    });

    // Faults between the devices and the server (testing/sync-faults.ts): over HTTP a real
    // connection cut, body cut or restart of the loopback server; in process, the same script
    // on the remote.
    describe("faults", () => {
      test("a connection cut before the server runs a push: nothing applied, the retry sends it once", async (h) => {
        const a = await h.device();
        const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
        await s.append([text("one"), reply("two")]);
        h.faults.inject({ kind: "drop-before", route: "push" });
        expect(isCut(await h.sync(a).catch((e: unknown) => e))).toBe(true);
        expect(await h.server.list()).toEqual([]);
        const retry = await h.sync(a);
        expect([retry.pushed, retry.acknowledged]).toEqual([2, await ids(s)]);
      });

      test("a connection cut after the server committed a push: the retry is acknowledged as duplicates", async (h) => {
        const a = await h.device();
        const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
        await h.sync(a);
        await s.append([text("one"), reply("two")]);
        h.faults.inject({ kind: "drop-after", route: "push" });
        expect(isCut(await h.sync(a).catch((e: unknown) => e))).toBe(true);
        expect(await ids(await h.server.open(REF))).toEqual(await ids(s));
        const retry = await h.sync(a);
        expect([retry.pushed, retry.acknowledged]).toEqual([0, await ids(s)]);
        expect(await ids(await h.server.open(REF))).toEqual(await ids(s));
      });

      test("a push whose body is cut short: a typed 400, the server's store unchanged, the retry converges", async (h) => {
        if (!h.target.faults) h.skip("a remote in process has no request body to cut");
        const a = await h.device();
        const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
        await s.append(text("one"));
        await h.sync(a);
        await s.append([reply("two"), text("three")]);
        const before = await snapshot(h.target.server);
        h.faults.inject({ kind: "truncate-request", route: "push" });
        const refusal = await h.sync(a).catch((e: unknown) => e);
        expect(refusal).toBeInstanceOf(SyncRefusedError);
        expect(refusal).toMatchObject({ status: 400, reason: "malformed", message: expect.stringMatching(/^push: the body is not JSON/) });
        expect(await snapshot(h.target.server)).toEqual(before);
        expect((await h.sync(a)).pushed).toBe(2);
      });

      test("an answer cut short, to a push and to a pull: a typed error, and the retry converges", async (h) => {
        if (!h.target.faults) h.skip("a remote in process has no answer body to cut");
        const a = await h.device();
        const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
        await s.append([text("one"), reply("two")]);
        h.faults.inject({ kind: "truncate-response", route: "push" });
        await expect(h.sync(a)).rejects.toMatchObject({
          code: "internal",
          message: expect.stringMatching(/push answered HTTP 200 with a body that is not JSON/),
        });
        expect((await h.sync(a)).acknowledged).toEqual(await ids(s));
        const b = await h.device();
        h.faults.inject({ kind: "truncate-response", route: "pull" });
        await expect(h.sync(b)).rejects.toMatchObject({ code: "internal" });
        expect((await h.sync(b)).pulled).toBe(2);
      });

      test("two devices reconnect at once: the push held at the server arrives second and becomes the fork", async (h) => {
        const { a, b, s } = await twoDevicesSharing(h);
        await s.append([text("A3"), reply("A4")]);
        await (await b.sessions.open(REF)).append([text("B3"), reply("B4")]);
        const aTail = await idsAfter(a, 2);
        const bTail = await idsAfter(b, 2);
        const held = h.faults.inject({ kind: "hold-before", route: "push" });
        const first = h.sync(a);
        await held.met;
        expect((await h.sync(b)).forks).toEqual([]);
        held.release();
        const report = await first;
        expect(report.forks).toHaveLength(1);
        expect(await idsAfterIn(await h.server.open(REF), 2)).toEqual(bTail);
        expect(await idsAfterIn(await h.server.open(report.forks[0]!.forked_as), 2)).toEqual(aTail);
      });

      test("a duplicate push held at the server while its copy is applied: applied once", async (h) => {
        const a = await h.device();
        const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
        await h.sync(a);
        await s.append([text("one"), reply("two")]);
        const push = { v: SYNC_PROTOCOL_VERSION, client_id: "client-held", mutations: [appendOf(s, 0)] };
        const held = h.faults.inject({ kind: "hold-before", route: "push" });
        const late = a.remote.push(push);
        await held.met;
        expect((await a.remote.push(push)).results.map((r) => r.status)).toEqual(["applied"]);
        held.release();
        expect((await late).results).toMatchObject([{ status: "duplicate", result: { status: "applied" } }]);
        expect(await ids(await h.server.open(REF))).toEqual(await ids(s));
        for (const id of await ids(s)) a.acknowledged.add(id);
      }, true);

      test("a restart in the middle of a batch: the request it cut applies nothing, the next run sends the rest once", async (h) => {
        const a = await h.device();
        const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
        await h.sync(a);
        for (let i = 0; i < 6; i++) await s.append([text(`q${i}`), reply(`a${i}`)]);
        const batches = { batchMessages: 2, batchMutations: 2 };
        const held = h.faults.inject({ kind: "hold-before", route: "push", skip: 1 });
        const run = h.sync(a, batches).catch((e: unknown) => e);
        await held.met;
        await h.restart();
        expect(isCut(await run)).toBe(true);
        expect((await ids(await h.server.open(REF))).length).toBe(4);
        const report = await h.sync(a, batches);
        expect(report.pushed).toBe(8);
        expect(await ids(await h.server.open(REF))).toEqual(await ids(s));
      });

      test("a restart while a committed push's answer is held: the answer is lost, the retry applies nothing twice", async (h) => {
        const a = await h.device();
        const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
        await s.append([text("one"), reply("two"), text("three")]);
        const held = h.faults.inject({ kind: "hold-after", route: "push" });
        const run = h.sync(a).catch((e: unknown) => e);
        await held.met;
        await h.restart();
        expect(isCut(await run)).toBe(true);
        const retry = await h.sync(a);
        expect([retry.pushed, retry.acknowledged]).toEqual([0, await ids(s)]);
      });

      test("a read cut in the middle of a re-read: the messages only the device holds stay, and reach the fork", async (h) => {
        const { a, b, s } = await twoDevicesSharing(h);
        await s.append(text("A3"));
        await h.sync(a);
        const onB = await b.sessions.open(REF);
        await onB.append(text("B3"));
        // B's push forks B3; the pull after it is cut, so B re-reads s1 on its next run.
        h.faults.inject({ kind: "drop-before", route: "pull" });
        expect(isCut(await h.sync(b).catch((e: unknown) => e))).toBe(true);
        await (await b.sessions.open(REF)).append(reply("B4, after the fork"));
        const b4 = (await b.sessions.open(REF)).active.at(-1)!.message_id;
        h.written.add(b4);
        // A run of s1 alone: its first read (the server's copy of s1, for the re-read) is cut; B's copy, B4 in it, must stay.
        h.faults.inject({ kind: "drop-before", route: "read" });
        expect(isCut(await syncStores({ local: b.sessions, remote: b.remote, refs: [REF] }).catch((e: unknown) => e))).toBe(true);
        expect((await ids(await b.sessions.open(REF))).at(-1)).toBe(b4);
        const report = await h.sync(b);
        expect(report.acknowledged).toContain(b4);
      });

      test("a pull cut after installing a session, then a compaction there: one run brings the segment to the server", async (h) => {
        const a = await h.device();
        for (const id of ["s1", "s2"]) {
          const session = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: id });
          for (let i = 0; i < 3; i++) await session.append([text(`${id} q${i}`), reply(`${id} a${i}`)]);
        }
        await h.sync(a);
        const b = await h.device();
        // B installs one session, then the read of the other is cut: B holds the first without having agreed on it.
        h.faults.inject({ kind: "drop-before", route: "read", skip: 1 });
        expect(isCut(await h.sync(b).catch((e: unknown) => e))).toBe(true);
        const installed = (await b.sessions.list()).map((m) => `${m.agent_id}/${m.workspace_id}/${m.session_id}`);
        expect(installed).toHaveLength(1);
        const onB = await b.sessions.open(installed[0]!);
        await onB.compact({ summarizer: new ExtractiveSummarizer() });
        // B's create of it is an append of messages the server has; its segment must follow in the same run.
        await h.sync(b);
        expect((await (await h.server.open(installed[0]!)).segments()).map(rangeName)).toEqual((await onB.segments()).map(rangeName));
      });

      for (const when of ["after the server committed it", "before it reached the server"] as const) {
        test(`a reload in the middle of a push ${when}: the new page sends the same mutations, applied once`, async (h) => {
          const a = await h.device();
          const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
          await h.sync(a);
          await s.append([text("one"), reply("two")]);
          const held = h.faults.inject({ kind: when === "before it reached the server" ? "hold-before" : "hold-after", route: "push" });
          const page = new AbortController();
          const abandoned = h.sync(a, { signal: page.signal }).catch((e: unknown) => e);
          await held.met;
          // The ledger holds the push's number before the request left.
          expect(await pendingNumbers(a)).toEqual([2]);
          // The reload: the page's engine and sessions are gone (its run ends where it waits, and its lock with it, as a
          // page's Web Lock does), the request still on its way; a new one opens the same store.
          page.abort(new Error("the page is gone"));
          expect(await abandoned).toMatchObject({ message: "the page is gone" });
          a.sessions = new Sessions({ storage: a.storage });
          const report = await h.sync(a);
          expect(report.acknowledged).toEqual(await ids(s));
          expect(report.pushed).toBe(when === "before it reached the server" ? 2 : 0);
          // The old page's request reaches the server late (its answer lost with the page): a duplicate.
          if (when === "before it reached the server") held.release({ cut: true });
          else held.drop();
          expect(await ids(await h.server.open(REF))).toEqual(await ids(s));
        });
      }

      test("a second run of a device while its first is under way is refused, nothing written; the next one sends the rest once", async (h) => {
        const a = await h.device();
        const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
        await s.append([text("one"), reply("two")]);
        const held = h.faults.inject({ kind: "hold-before", route: "push" });
        const first = h.sync(a);
        await held.met;
        const ledger = await syncStateOf(a);
        // A commit the second run would number from the same ledger as the first: the remote would take it for a duplicate.
        await s.append(text("three, during the first run"));
        const refused = await h.sync(a).catch((e: unknown) => e);
        expect(refused).toMatchObject({ code: "writer-locked", details: { path: "sync/run.lock" } });
        expect((refused as Error).message).toMatch(/another sync of this store is running, by .* for "sync with .+"/);
        expect(await syncStateOf(a)).toEqual(ledger);
        held.release();
        expect((await first).acknowledged).toEqual((await ids(s)).slice(0, 2));
        const next = await h.sync(a);
        expect(next.acknowledged).toEqual((await ids(s)).slice(2));
        expect(await ids(await h.server.open(REF))).toEqual(await ids(s));
      });

      for (const run of [4, 63, 124]) {
        test(`randomized with faults: four devices, offline windows, cut connections and bodies, delays, restarts (seed ${run})`, async (h) => {
          await randomizedWithFaults(h, 20261205 + run * 104729);
        });
      }
    });
  });
}

/** Two devices that both hold session s1 with two messages, synced. */
async function twoDevicesSharing(h: Harness): Promise<{ a: Device; b: Device; s: Session }> {
  const a = await h.device();
  const b = await h.device();
  const s = await a.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
  await s.append([text("one"), reply("two")]);
  await h.sync(a);
  expect((await h.sync(b)).pulled).toBe(2);
  return { a, b, s };
}

/** The invariants, after a final sync of every device twice (so each sees what the others pushed). */
async function checkInvariants(h: Harness): Promise<SyncCaseCounts> {
  for (let round = 0; round < 2; round++) for (const device of h.devices) await h.sync(device);
  const server = h.server;
  const owners = new Map<string, string[]>();
  let forked = 0;
  let found = 0;
  for (const archived of [false, true]) {
    for (const meta of await server.list({ archived })) {
      const ref = `${meta.agent_id}/${meta.workspace_id}/${meta.session_id}`;
      const history = await fullHistory(await server.open(ref, { archived }));
      expect(history.map((m) => m.sequence), `${ref}: sequences 1..n`).toEqual(history.map((_, i) => i + 1));
      const own = history.filter((m) => m.sequence > (meta.forked_from?.through_sequence ?? 0));
      if (meta.forked_from) forked += own.length;
      found += own.length;
      for (const m of own) owners.set(m.message_id, [...(owners.get(m.message_id) ?? []), ref]);
    }
  }
  const acknowledged = new Set([...h.devices.flatMap((d) => [...d.acknowledged]), ...h.written].filter((id) => !h.forgotten.has(id)));
  for (const id of acknowledged) {
    expect(owners.get(id), `message ${id} (acknowledged or written): exactly once across the sessions and their forks`).toHaveLength(1);
  }
  for (const [id, refs] of owners) expect(refs, `message ${id}`).toHaveLength(1);
  for (const device of h.devices) {
    for (const archived of [false, true]) {
      const theirs = (await server.list({ archived })).map((m) => m.session_id).sort();
      const mine = (await device.sessions.list({ archived })).map((m) => m.session_id).sort();
      expect(mine, "a device lists what the server lists").toEqual(theirs);
      for (const meta of await server.list({ archived })) {
        const ref = `${meta.agent_id}/${meta.workspace_id}/${meta.session_id}`;
        const [a, b] = [await server.open(ref, { archived }), await device.sessions.open(ref, { archived })];
        expect(await ids(b), `${ref}: the device converged`).toEqual(await ids(a));
        expect((await b.segments()).map(rangeName), `${ref}: same segments`).toEqual((await a.segments()).map(rangeName));
        expect([b.meta.title, b.system], `${ref}: same labels and instruction`).toEqual([a.meta.title, a.system]);
      }
    }
  }
  return { acknowledged: acknowledged.size, found, forked, faults: h.faults.log.filter((request) => request.fault !== null).length };
}

async function fullHistory(session: Session): Promise<MessageRecord[]> {
  const out: MessageRecord[] = [];
  for (const range of await session.segments()) out.push(...(await session.readSegment(range)).messages);
  out.push(...session.active);
  return out;
}

/** A segment range as its name says it, for comparing segmentations. */
function rangeName(range: { readonly start: number; readonly end: number }): string {
  return `${range.start}-${range.end}`;
}

async function ids(session: Session): Promise<string[]> {
  return (await fullHistory(session)).map((m) => m.message_id);
}

async function idsAfterIn(session: Session, sequence: number): Promise<string[]> {
  return (await fullHistory(session)).filter((m) => m.sequence > sequence).map((m) => m.message_id);
}

async function idsAfter(device: Device, sequence: number): Promise<string[]> {
  return idsAfterIn(await device.sessions.open(REF), sequence);
}

/** Every file of a store, by path (a backup). */
async function snapshot(storage: Store, dir = ""): Promise<Map<string, Uint8Array>> {
  const files = new Map<string, Uint8Array>();
  for (const name of await storage.list(dir)) {
    const path = dir ? `${dir}/${name}` : name;
    const children = await storage.list(path).catch(() => []);
    if (children.length > 0) { for (const [p, bytes] of await snapshot(storage, path)) files.set(p, bytes); }
    else {
      const bytes = await storage.read(path).catch(() => undefined);
      if (bytes) files.set(path, bytes);
    }
  }
  return files;
}

/** Puts a store back to a backup: every top-level entry removed, the backup's files written. */
async function restore(storage: Store, files: Map<string, Uint8Array>): Promise<void> {
  for (const name of await storage.list("")) await storage.remove(name);
  for (const [path, bytes] of files) await storage.replace(path, bytes);
}

/** `remote`, except that the answer to its next push is lost after the server committed it. */
function losingNextPushAnswer(remote: SyncRemote): SyncRemote {
  let lose = true;
  return {
    ...remote,
    push: async (request) => {
      const outcome = await remote.push(request);
      if (!lose) return outcome;
      lose = false;
      throw new Error("connection reset after the server committed");
    },
  };
}

/** An append of a session's Active messages after `base`, as mutation number 1. */
function appendOf(session: Session, base: number): Mutation {
  const messages = session.active.filter((m) => m.sequence > base);
  const at = session.active.find((m) => m.sequence === base);
  return {
    number: 1,
    op: "append",
    ref: `${session.ref.agentId}/${session.ref.workspaceId}/${session.ref.sessionId}`,
    base_sequence: base,
    base_message_id: at?.message_id ?? null,
    messages,
  };
}

/** The client id a device's engine uses (its sync state in the device's store). */
async function clientIdOf(device: Device): Promise<string> {
  return (await syncStateOf(device)).client_id;
}

/** The numbers of the mutations in a device's outbox. */
async function pendingNumbers(device: Device): Promise<number[]> {
  return (await syncStateOf(device)).pending.map((m) => m.number);
}

async function syncStateOf(device: Device): Promise<{ client_id: string; pending: Mutation[] }> {
  // The state, not the lock a run holds beside it.
  const name = (await device.storage.list("sync/remotes")).find((entry) => entry.endsWith(".json"));
  const bytes = await device.storage.read(`sync/remotes/${name}`);
  return JSON.parse(new TextDecoder().decode(bytes)) as { client_id: string; pending: Mutation[] };
}

/** A randomized run's write on one of `refs`: 1 to 3 messages appended (each to end up on the server once), or a compaction. */
async function writeAtRandom(h: Harness, device: Device, refs: readonly string[], kind: "append" | "compact", step: number, random: (n: number) => number) {
  const session = await device.sessions.open(refs[random(refs.length)]!);
  if (kind === "compact") {
    if (session.active.length >= 4) await session.compact({ summarizer: new ExtractiveSummarizer() });
    return;
  }
  const count = 1 + random(3);
  for (let i = 0; i < count; i++) await session.append(i % 2 === 0 ? text(`step ${step}.${i}`) : reply(`step ${step}.${i}`));
  for (const m of session.active.slice(-count)) h.written.add(m.message_id);
}

/**
 * The randomized run with faults: four devices append, compact, go offline for a while (they
 * write and do not sync), and sync through faults chosen at random: connections cut before
 * or after the server ran, bodies cut (over HTTP), delays, and server restarts while a
 * request of the run is held. A sync a fault broke fails with the fault's error; the next
 * one resumes.
 */
async function randomizedWithFaults(h: Harness, start: number): Promise<void> {
  let seed = start;
  const random = (n: number) => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed % n;
  };
  const devices = [await h.device(), await h.device(), await h.device(), await h.device()];
  const offlineUntil = devices.map(() => 0);
  await devices[0]!.sessions.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
  const kinds: SyncFaultKind[] = ["drop-before", "drop-after", "delay", ...(h.target.faults ? (["truncate-request", "truncate-response"] as const) : [])];
  const routes = [undefined, "push", "pull", "read", "segment"] as const;
  for (let step = 0; step < 48; step++) {
    const index = random(devices.length);
    const device = devices[index]!;
    const refs = (await device.sessions.list()).map((m) => `${m.agent_id}/${m.workspace_id}/${m.session_id}`).sort();
    const action = random(12);
    if (action < 6 && refs.length > 0) {
      await writeAtRandom(h, device, refs, action < 5 ? "append" : "compact", step, random);
    } else if (action < 7) {
      offlineUntil[index] = step + 3 + random(8);
    } else if (step < offlineUntil[index]!) {
      continue;
    } else if (action < 9) {
      await h.sync(device);
    } else if (action < 11) {
      const route = routes[random(routes.length)];
      h.faults.inject({ kind: kinds[random(kinds.length)]!, ...(route ? { route } : {}), skip: random(3), ms: random(30) });
      await h.sync(device).catch(expectInjected);
      h.faults.clear();
    } else {
      const held = h.faults.inject({ kind: random(2) ? "hold-before" : "hold-after", skip: random(4) });
      const run = h.sync(device).then(() => "done" as const, (error: unknown) => error);
      if ((await Promise.race([held.met.then(() => "held" as const), run])) === "held") {
        await h.restart();
        expectInjected(await run);
      }
      h.faults.clear();
    }
  }
}

/** A network error, as a cut connection gives: fetch's `TypeError` (happy-dom's `NetworkError`), or `httpRemote`'s `StorageError` around it. */
function isCut(error: unknown): boolean {
  if (error instanceof StorageError) return isCut(error.cause);
  return error instanceof TypeError || (error instanceof Error && error.name === "NetworkError");
}

/** A sync's failure that an injected fault explains: a cut connection, a body cut short (refused, or unreadable); anything else is thrown. */
function expectInjected(error: unknown): void {
  if (isCut(error)) return;
  if (error instanceof SyncRefusedError && error.reason === "malformed" && /the body is not JSON/.test(error.message)) return;
  if (error instanceof Error && (error as { code?: string }).code === "internal" && /a body that is not JSON/.test(error.message)) return;
  throw error;
}
