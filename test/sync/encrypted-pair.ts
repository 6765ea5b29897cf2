/**
 * What the encrypted sync tests share (not a test file): one key-encryption key for every
 * device of a pair, devices on encrypted stores, and the server's store as a key holder reads
 * it (the invariants' view; the server itself never has the key).
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  CorruptSessionError,
  EncryptedStorage,
  ExtractiveSummarizer,
  importKeyEncryptionKey,
  InvalidInputError,
  type KeyProvider,
  KeyRequiredError,
  keyring,
  MemoryStorage,
  Sessions,
  type StoragePort,
} from "../../core/mod.ts";
import { STORE_MARKER } from "../../core/encryption/mod.ts";
import { SyncRefusedError, type SyncRemote, syncStores } from "../../core/sync/mod.ts";
import type { SyncTestTarget } from "../../testing/sync-conformance.ts";

/** A fresh KEK named `kid`, as a keyring. */
export async function newKeyring(kid = "k1"): Promise<KeyProvider> {
  return keyring({ [kid]: await importKeyEncryptionKey(crypto.getRandomValues(new Uint8Array(32))) }, kid);
}

/**
 * `store` read with `provider`'s key: the store marker of an encrypted store under that key is
 * shown at `encryption.json` (the server's store has none: it is not an encrypted store, it
 * holds encrypted sessions), every other entry is the store's own.
 */
export async function keyHolderView(store: StoragePort, provider: KeyProvider): Promise<EncryptedStorage> {
  const marker = (await (await EncryptedStorage.create(new MemoryStorage(), provider)).inner.read(STORE_MARKER))!;
  const overlay = new Proxy(store, {
    get(target, property, receiver) {
      if (property === "read") return (path: string) => (path === STORE_MARKER ? Promise.resolve(marker) : target.read(path));
      if (property === "readTail") {
        return (
          path: string,
          max: number,
        ) => (path === STORE_MARKER
          ? Promise.resolve({ bytes: marker.subarray(Math.max(0, marker.length - max)), size: marker.length })
          : target.readTail(path, max));
      }
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return EncryptedStorage.open(overlay, provider);
}

/** A sync test target whose devices are encrypted stores (in memory, or `newInner`) under one KEK. */
export async function encryptedTarget(
  server: StoragePort,
  remote: (user: string | null) => SyncRemote,
  rest: Partial<Pick<SyncTestTarget, "unauthenticated" | "teardown">> & { newInner?: () => StoragePort | Promise<StoragePort> } = {},
): Promise<SyncTestTarget & { provider: KeyProvider }> {
  const provider = await newKeyring();
  const { newInner, ...target } = rest;
  return {
    ...target,
    provider,
    server,
    serverView: await keyHolderView(server, provider),
    newDevice: async () => EncryptedStorage.create(newInner ? await newInner() : new MemoryStorage(), provider),
    remote,
  };
}

/** A server for the end-to-end checks: its store, the remote as a user reaches it, and every byte it holds. */
export interface EndToEndServer {
  readonly server: StoragePort;
  remote(user: string): SyncRemote;
  /** Every byte of the server's store: files on disk, rows of the schema, entries in memory. */
  dump(): Promise<Uint8Array>;
  teardown?(): Promise<void> | void;
}

const PLANTED = [
  "PLANTED-TITLE-7f3a",
  "PLANTED-INSTRUCTION-91c2",
  "PLANTED-QUESTION-55d0",
  "PLANTED-REPLY-a8e4",
  "PLANTED-FORK-TAIL-3b19",
  "PLANTED-LABEL-2-6c7e",
];

/** Every entry of a store, read through the store's own calls (an in-memory backend has no other bytes). */
export async function everyEntry(storage: StoragePort, dir = ""): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for (const name of await storage.list(dir)) {
    const path = dir ? `${dir}/${name}` : name;
    const children = await storage.list(path).catch(() => []);
    if (children.length > 0) chunks.push(await everyEntry(storage, path));
    else chunks.push(encoder.encode(path), (await storage.read(path).catch(() => undefined)) ?? new Uint8Array());
  }
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

const encoder = new TextEncoder();

function expectNoPlanted(bytes: Uint8Array, where: string): void {
  const text = new TextDecoder().decode(bytes);
  for (const planted of PLANTED) expect(text.includes(planted), `${where} holds ${planted}`).toBe(false);
  // Base64 of the planted text would mean a plaintext copy was only encoded, not sealed.
  for (const planted of PLANTED) expect(text.includes(btoa(planted).slice(0, 16)), `${where} holds ${planted} in base64`).toBe(false);
}

/**
 * The end-to-end checks over one server: planted text never reaches the server's store (nor
 * a device's store as stored, its sync outbox included), a device with another key is
 * `key-required`, a device in the clear is refused, and deleting a session shreds its keys
 * on the server too.
 */
export function runEndToEndChecks(name: string, setup: () => Promise<EndToEndServer>): void {
  describe(`end-to-end encrypted sync: ${name}`, () => {
    let server: EndToEndServer | undefined;
    afterEach(async () => {
      await server?.teardown?.();
      server = undefined;
    });

    it("planted text appears in no byte of the server's store after push, compaction, a fork, a label change and a pull", async () => {
      server = await setup();
      const provider = await newKeyring();
      const [a, b] = [await EncryptedStorage.create(new MemoryStorage(), provider), await EncryptedStorage.create(new MemoryStorage(), provider)];
      const [onA, onB] = [new Sessions({ storage: a }), new Sessions({ storage: b })];
      const remote = server.remote("alice");
      const s = await onA.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1", title: PLANTED[0], instruction: PLANTED[1] });
      for (let i = 0; i < 5; i++) {
        await s.append([
          { role: "user", parts: [{ type: "text", text: `${PLANTED[2]} ${i}` }] },
          { role: "assistant", parts: [{ type: "text", text: `${PLANTED[3]} ${i}` }] },
        ]);
      }
      await s.compact({ summarizer: new ExtractiveSummarizer() });
      expect(s.summary?.text).toContain("PLANTED");
      await syncStores({ local: onA, remote });
      await syncStores({ local: onB, remote });
      // Both write after sequence 10: B's tail becomes a fork the device seals and pushes.
      await s.append({ role: "user", parts: [{ type: "text", text: `${PLANTED[2]} on A` }] });
      await (await onB.open("a1/shared/s1")).append({ role: "user", parts: [{ type: "text", text: PLANTED[4] }] });
      await syncStores({ local: onA, remote });
      const forked = await syncStores({ local: onB, remote });
      expect(forked.forks).toHaveLength(1);
      // A third-party tool changes the title on A.
      const now = await onA.open("a1/shared/s1");
      await a.replace(now.paths.meta, encoder.encode(JSON.stringify({ ...now.meta, title: PLANTED[5], revision: now.revision + 1 })));
      await syncStores({ local: onA, remote });
      await syncStores({ local: onB, remote });
      expect((await onB.open("a1/shared/s1")).meta.title).toBe(PLANTED[5]);
      expect((await onB.open(forked.forks[0]!.forked_as)).active.at(-1)!.parts[0]).toMatchObject({ type: "text", text: PLANTED[4] });
      const dump = await server.dump();
      expect(dump.length).toBeGreaterThan(1000);
      expect(new TextDecoder().decode(dump)).toContain('"sealed":1');
      expectNoPlanted(dump, "the server's store");
      expectNoPlanted(await everyEntry(a.inner), "device A's store as stored");
      expectNoPlanted(await everyEntry(b.inner), "device B's store as stored");
    });

    it("a device whose keyring lacks the session's kid is key-required, and writes nothing", async () => {
      server = await setup();
      const a = new Sessions({ storage: await EncryptedStorage.create(new MemoryStorage(), await newKeyring("k1")) });
      await (await a.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" })).append({ role: "user", parts: [{ type: "text", text: "sealed" }] });
      await syncStores({ local: a, remote: server.remote("alice") });
      const other = await EncryptedStorage.create(new MemoryStorage(), await newKeyring("k2"));
      const refusal = await syncStores({ local: new Sessions({ storage: other }), remote: server.remote("alice") }).catch((e: unknown) => e);
      expect(refusal).toBeInstanceOf(KeyRequiredError);
      expect((refusal as KeyRequiredError).code).toBe("key-required");
      expect(await new Sessions({ storage: other }).list()).toEqual([]);
    });

    it("a device in the clear is refused both ways with encryption-mismatch, never mixed", async () => {
      server = await setup();
      const a = new Sessions({ storage: await EncryptedStorage.create(new MemoryStorage(), await newKeyring()) });
      await (await a.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" })).append({ role: "user", parts: [{ type: "text", text: "sealed" }] });
      await syncStores({ local: a, remote: server.remote("alice") });
      const before = await server.dump();
      // Pulling an encrypted session into a store in the clear.
      const clear = new Sessions({ storage: new MemoryStorage() });
      const pulled = await syncStores({ local: clear, remote: server.remote("alice") }).catch((e: unknown) => e);
      expect(pulled).toBeInstanceOf(SyncRefusedError);
      expect((pulled as SyncRefusedError).reason).toBe("encryption-mismatch");
      expect(await clear.list()).toEqual([]);
      // Pushing plaintext into it: the same ref written in the clear on another device.
      const writer = new Sessions({ storage: new MemoryStorage() });
      await (await writer.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" })).append({
        role: "user",
        parts: [{ type: "text", text: "in the clear" }],
      });
      const pushed = await syncStores({ local: writer, remote: server.remote("bob") }).catch((e: unknown) => e);
      expect((pushed as SyncRefusedError).reason).toBe("encryption-mismatch");
      expect((pushed as SyncRefusedError).status).toBe(409);
      const after = new TextDecoder().decode(await server.dump());
      expect(after.includes("in the clear")).toBe(false);
      expect(after.length).toBeGreaterThanOrEqual(new TextDecoder().decode(before).length);
      // And sealed records into a session the server holds in the clear (written there by a third device in the clear).
      const third = new Sessions({ storage: new MemoryStorage() });
      await (await third.create({ agentId: "a1", workspaceId: "shared", sessionId: "plain" })).append({ role: "user", parts: [{ type: "text", text: "x" }] });
      await syncStores({ local: third, remote: server.remote("carol"), refs: ["a1/shared/plain"] });
      await (await a.create({ agentId: "a1", workspaceId: "shared", sessionId: "plain" })).append({ role: "user", parts: [{ type: "text", text: "y" }] });
      const sealedIntoClear = await syncStores({ local: a, remote: server.remote("alice"), refs: ["a1/shared/plain"] }).catch((e: unknown) => e);
      expect((sealedIntoClear as SyncRefusedError).reason).toBe("encryption-mismatch");
    });

    it("an encrypted store reached through anything but its EncryptedStorage is refused before anything travels", async () => {
      server = await setup();
      const provider = await newKeyring();
      const encrypted = await EncryptedStorage.create(new MemoryStorage(), provider);
      await (await new Sessions({ storage: encrypted }).create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" })).append({
        role: "user",
        parts: [{ type: "text", text: PLANTED[2] }],
      });
      // A host's wrapper around the decorator (logging, metrics), and the bare backend under it.
      const calls = ["read", "readTail", "list", "replace", "append", "createExclusive", "truncate", "remove", "move", "applyCommitPlan"] as const;
      const wrapped = Object.fromEntries(
        calls.map((name) => [name, (encrypted[name] as (...args: unknown[]) => unknown).bind(encrypted)]),
      ) as unknown as StoragePort;
      for (const storage of [wrapped, encrypted.inner]) {
        const refusal = await syncStores({ local: new Sessions({ storage }), remote: server.remote("alice") }).catch((e: unknown) => e);
        expect(refusal).toBeInstanceOf(InvalidInputError);
      }
      expectNoPlanted(await server.dump(), "the server's store");
    });

    it("a record the server moved to another session or file does not open on a device", async () => {
      server = await setup();
      const provider = await newKeyring();
      const a = new Sessions({ storage: await EncryptedStorage.create(new MemoryStorage(), provider) });
      for (const id of ["s1", "s2"]) {
        await (await a.create({ agentId: "a1", workspaceId: "shared", sessionId: id })).append({ role: "user", parts: [{ type: "text", text: id }] });
      }
      await syncStores({ local: a, remote: server.remote("alice") });
      // The server (or whoever holds its store) puts s2's first line in place of s1's.
      const active = (id: string) => `agents/a1/workspaces/shared/sessions/${id}/messages/active.jsonl`;
      await server.server.replace(active("s1"), (await server.server.read(active("s2")))!);
      const b = new Sessions({ storage: await EncryptedStorage.create(new MemoryStorage(), provider) });
      const refusal = await syncStores({ local: b, remote: server.remote("alice"), refs: ["a1/shared/s1"] }).catch((e: unknown) => e);
      expect(refusal).toBeInstanceOf(CorruptSessionError);
      expect(String((refusal as CorruptSessionError).message)).toMatch(/authentication failed|not one of this session.s/);
      expect(await b.list()).toEqual([]);
    });

    it("a record the server left out of a page is found (the sequences are authenticated), and nothing is written", async () => {
      server = await setup();
      const provider = await newKeyring();
      const a = new Sessions({ storage: await EncryptedStorage.create(new MemoryStorage(), provider) });
      const s = await a.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" });
      await s.append(["one", "two", "three"].map((text) => ({ role: "user" as const, parts: [{ type: "text" as const, text }] })));
      await syncStores({ local: a, remote: server.remote("alice") });
      const path = "agents/a1/workspaces/shared/sessions/s1/messages/active.jsonl";
      const lines = new TextDecoder().decode(await server.server.read(path)).split("\n");
      await server.server.replace(path, encoder.encode([lines[0], lines[2], ""].join("\n")));
      const b = new Sessions({ storage: await EncryptedStorage.create(new MemoryStorage(), provider) });
      const refusal = await syncStores({ local: b, remote: server.remote("alice") }).catch((e: unknown) => e);
      expect(refusal).toBeInstanceOf(CorruptSessionError);
      expect(await b.list()).toEqual([]);
    });

    it("deleting the session on a device shreds its keys on the server: a copy of its lines no longer opens with the KEK", async () => {
      server = await setup();
      const provider = await newKeyring();
      const [a, b] = [await EncryptedStorage.create(new MemoryStorage(), provider), await EncryptedStorage.create(new MemoryStorage(), provider)];
      const [onA, onB] = [new Sessions({ storage: a }), new Sessions({ storage: b })];
      await (await onA.create({ agentId: "a1", workspaceId: "shared", sessionId: "s1" })).append({
        role: "user",
        parts: [{ type: "text", text: "to be shredded" }],
      });
      await syncStores({ local: onA, remote: server.remote("alice") });
      await syncStores({ local: onB, remote: server.remote("alice") });
      const dir = "agents/a1/workspaces/shared/sessions/s1";
      // What a stale copy of the server's store keeps: the sealed lines (a backup would also hold keys.json: FORMAT.md).
      const copied = (await server.server.read(`${dir}/messages/active.jsonl`))!;
      expect(await server.server.read(`${dir}/keys.json`)).toBeDefined();
      await onA.delete("a1/shared/s1");
      await syncStores({ local: onA, remote: server.remote("alice") });
      expect(await server.server.read(`${dir}/keys.json`)).toBeUndefined();
      expect(await server.server.list(dir)).toEqual([]);
      await syncStores({ local: onB, remote: server.remote("alice") });
      expect(await b.inner.read(`${dir}/keys.json`)).toBeUndefined();
      // The copied lines, put back where they were sealed, in a store under the same KEK: no key opens them.
      const reader = await EncryptedStorage.create(new MemoryStorage(), provider);
      const refused: string[] = [];
      const opened = await EncryptedStorage.open(reader.inner, provider, { onRefused: (r) => refused.push(r.reason) });
      await reader.inner.replace(`${dir}/messages/active.jsonl`, copied);
      const view = new TextDecoder().decode(await opened.read(`${dir}/messages/active.jsonl`));
      expect(view).not.toContain("to be shredded");
      expect(refused[0]).toMatch(/no data keys/);
    });
  });
}
