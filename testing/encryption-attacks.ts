/**
 * The attack suite of encrypted stores (docs/FORMAT.md "Encrypted stores"): every backend
 * runs it under {@linkcode EncryptedStorage}, the way it runs the storage conformance suite.
 * Each attack changes the stored bytes through the backend itself (never through the
 * decorator) and checks that what was changed is refused as a fatal diagnostic naming its
 * file and line, or a typed error, and never read as valid; and that no message text, title
 * or model label appears in any byte the backend stores.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * import { runEncryptionAttackTests } from "sessionfold/testing/conformance";
 *
 * runEncryptionAttackTests("MemoryStorage", async () => ({ storage: new MemoryStorage() }));
 * ```
 * @module
 */
import { describe, expect, it } from "vitest";
import {
  type AesGcm,
  CorruptSessionError,
  EncryptedStorage,
  importKeyEncryptionKey,
  InvalidInputError,
  type KeyProvider,
  KeyRequiredError,
  keyring,
  type SealRefusal,
  Sessions,
  type StoragePort,
  verifySession,
  WrongKeyError,
} from "../core/mod.ts";
import { FaultyStorage, SimulatedCrashError } from "./faulty-storage.ts";
import { ScriptedSummarizer } from "./scripted-summarizer.ts";

/** A fresh, empty backend for one test, and how to read every byte it stores. */
export interface EncryptionAttackTarget {
  /** The backend (not encrypted: the suite wraps it). */
  readonly storage: StoragePort;
  /**
   * Every byte the backend keeps, as the platform stores it (files on disk, IndexedDB values,
   * database rows). Without it the suite reads every file through `storage`.
   */
  readonly dump?: () => Promise<Uint8Array>;
  readonly teardown?: () => Promise<void>;
  /** The AES-256-GCM the store seals with (a runtime's, e.g. the Node runtime's `nodeAesGcm`); default WebCrypto's. */
  readonly cipher?: AesGcm;
}

const REF = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
const OTHER = { agentId: "a1", workspaceId: "w1", sessionId: "s2" };
const DIR = "agents/a1/workspaces/w1/sessions/s1";
const ACTIVE = `${DIR}/messages/active.jsonl`;
const META = `${DIR}/meta.json`;
/** Text planted in every kind of content, to be looked for in the stored bytes. */
const SECRET = "PLANTED-SECRET-7c1e";
const utf8 = new TextEncoder();
const text = (bytes: Uint8Array | undefined): string => new TextDecoder().decode(bytes);

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

/** Every file under `dir`, through the port. */
async function walk(storage: StoragePort, dir: string, out: string[] = []): Promise<string[]> {
  for (const name of await storage.list(dir)) {
    const path = dir === "" ? name : `${dir}/${name}`;
    if ((await storage.list(path)).length > 0) await walk(storage, path, out);
    else out.push(path);
  }
  return out;
}

async function dumpThroughPort(storage: StoragePort): Promise<Uint8Array> {
  const files = await walk(storage, "agents");
  const chunks = await Promise.all([...files, "encryption.json"].map(async (path) => text(await storage.read(path))));
  return utf8.encode(chunks.join(""));
}

/**
 * Registers the suite for one backend; `setup` gives each test a fresh, empty one.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 *
 * runEncryptionAttackTests("MemoryStorage", async () => ({ storage: new MemoryStorage() }));
 * ```
 */
export function runEncryptionAttackTests(name: string, setup: () => Promise<EncryptionAttackTarget>): void {
  describe(`encrypted store attacks: ${name}`, () => {
    async function fixture(run: (f: Fixture) => Promise<void>): Promise<void> {
      const target = await setup();
      const k1 = await importKeyEncryptionKey(crypto.getRandomValues(new Uint8Array(32)));
      const k2 = await importKeyEncryptionKey(crypto.getRandomValues(new Uint8Array(32)));
      const refusals: SealRefusal[] = [];
      const provider = keyring({ k1 }, "k1");
      const cipher = target.cipher ? { cipher: target.cipher } : {};
      const storage = await EncryptedStorage.create(target.storage, provider, { ...cipher, onRefused: (r) => refusals.push(r) });
      const sessions = new Sessions({ storage, defaults: { summarizer: new ScriptedSummarizer() } });
      const reopen = async (keys: KeyProvider = provider) => {
        const again = await EncryptedStorage.open(target.storage, keys, { ...cipher, onRefused: (r) => refusals.push(r) });
        return { storage: again, sessions: new Sessions({ storage: again, defaults: { summarizer: new ScriptedSummarizer() } }) };
      };
      try {
        await run({ raw: target.storage, storage, sessions, reopen, refusals, k1, k2, dump: target.dump ?? (() => dumpThroughPort(target.storage)) });
      } finally {
        await (target.teardown ? target.teardown() : target.storage.close?.());
      }
    }

    /** A session s1 with `n` messages carrying the secret, a title and a model label. */
    async function seeded(f: Fixture, n = 6, ref = REF): Promise<void> {
      const session = await f.sessions.create({ ...ref, title: `title ${SECRET}`, modelLabel: `label ${SECRET}`, instruction: `instruction ${SECRET}` });
      for (let i = 1; i <= n; i++) await session.append({ role: "user", parts: [{ type: "text", text: `message ${i} ${SECRET}` }] });
      await session.close();
    }

    async function rawLines(f: Fixture, path = ACTIVE): Promise<string[]> {
      return text(await f.raw.read(path)).split("\n").slice(0, -1);
    }

    async function writeRawLines(f: Fixture, lines: readonly string[], path = ACTIVE): Promise<void> {
      await f.raw.replace(path, utf8.encode(lines.map((l) => `${l}\n`).join("")));
    }

    /** Opens s1 again from the stored bytes: its fatal diagnostics as `file:line`. */
    async function fatalAt(f: Fixture): Promise<string[]> {
      const { sessions } = await f.reopen();
      const report = await verifySession(sessions, REF);
      return report.diagnostics.filter((d) => d.fatal).map((d) => `${d.file}:${d.line}`);
    }

    it("round trip: everything written reads back, and no planted text is in any stored byte", () =>
      fixture(async (f) => {
        await seeded(f);
        const { sessions } = await f.reopen();
        const session = await sessions.open(REF);
        expect(session.active.map((m) => m.parts[0])).toEqual([1, 2, 3, 4, 5, 6].map((i) => ({ sequence: 1, type: "text", text: `message ${i} ${SECRET}` })));
        expect(session.meta.title).toBe(`title ${SECRET}`);
        expect(session.meta.model_label).toBe(`label ${SECRET}`);
        expect(session.system).toBe(`instruction ${SECRET}`);
        const stored = text(await f.dump());
        // The dump is the real store: its envelopes are there, the text is not.
        expect(stored).toContain('"sealed":1');
        expect(stored).toContain("sessionfold-session-keys");
        expect(stored).not.toContain(SECRET);
        expect(stored).not.toContain("message 1");
      }));

    it("listing reads the clear fields of meta.json; titles stay sealed", () =>
      fixture(async (f) => {
        await seeded(f);
        const clear = JSON.parse(text(await f.raw.read(META))) as Record<string, unknown>;
        expect(clear).toMatchObject({ sealed: 1, session_id: "s1", message_count: 6, revision: expect.any(Number) });
        expect(clear.title).toBeUndefined();
        expect(clear.model_label).toBeUndefined();
        const listed = await f.sessions.list();
        expect(listed.map((m) => [m.session_id, m.title])).toEqual([["s1", `title ${SECRET}`]]);
      }));

    it("two lines swapped are refused at their lines, and writes are blocked", () =>
      fixture(async (f) => {
        await seeded(f);
        const lines = await rawLines(f);
        [lines[2], lines[3]] = [lines[3]!, lines[2]!];
        await writeRawLines(f, lines);
        expect(await fatalAt(f)).toContain("messages/active.jsonl:3");
        const { sessions } = await f.reopen();
        const session = await sessions.open(REF);
        await expect(session.append({ role: "user", parts: [{ type: "text", text: "x" }] })).rejects.toBeInstanceOf(CorruptSessionError);
      }));

    it("a line replayed from another session is refused", () =>
      fixture(async (f) => {
        await seeded(f);
        await seeded(f, 6, OTHER);
        const other = await rawLines(f, `agents/a1/workspaces/w1/sessions/s2/messages/active.jsonl`);
        const lines = await rawLines(f);
        lines[1] = other[1]!;
        await writeRawLines(f, lines);
        // Line 2 does not open; the core then also finds sequence 3 after 1 (a gap) at line 3.
        expect((await fatalAt(f))[0]).toBe("messages/active.jsonl:2");
        expect(f.refusals.filter((r) => r.path === ACTIVE).map((r) => r.line)).toEqual([2]);
      }));

    it("a line replayed within the session (a duplicate) and a line removed are refused", () =>
      fixture(async (f) => {
        await seeded(f);
        const lines = await rawLines(f);
        await writeRawLines(f, [...lines.slice(0, 4), lines[1]!, ...lines.slice(4)]);
        expect(await fatalAt(f)).toContain("messages/active.jsonl:5");
        await writeRawLines(f, [...lines.slice(0, 2), ...lines.slice(3)]);
        expect(await fatalAt(f)).toContain("messages/active.jsonl:3");
      }));

    it("meta.json: an old version replayed never takes the revision back; one from another session is refused", () =>
      fixture(async (f) => {
        await seeded(f, 2);
        const old = await f.raw.read(META);
        const session = await f.sessions.open(REF);
        for (let i = 0; i < 3; i++) await session.append({ role: "user", parts: [{ type: "text", text: `later ${i}` }] });
        await session.close();
        const revision = (await (await f.reopen()).sessions.open(REF)).revision;
        await f.raw.replace(META, old!);
        const reopened = await (await f.reopen()).sessions.open(REF);
        expect(reopened.revision).toBe(revision);
        expect(reopened.active).toHaveLength(5);
        await seeded(f, 1, OTHER);
        await f.raw.replace(META, (await f.raw.read("agents/a1/workspaces/w1/sessions/s2/meta.json"))!);
        f.refusals.length = 0;
        const planted = await (await f.reopen()).sessions.open(REF).then((session) => session, (error: unknown) => asError(error));
        expect(f.refusals.some((r) => r.path === META)).toBe(true);
        if (!(planted instanceof Error)) expect(planted.meta.session_id).toBe("s1");
      }));

    it("a closed segment cut short, or with a line removed, is refused by its footer", () =>
      fixture(async (f) => {
        await seeded(f, 8);
        const session = await f.sessions.open(REF);
        await session.compact();
        const [range] = await session.segments();
        await session.close();
        const path = `${DIR}/messages/segments/${String(range!.start).padStart(12, "0")}-${String(range!.end).padStart(12, "0")}.jsonl`;
        const lines = await rawLines(f, path);
        const footerLine = `messages/segments/${path.split("/").at(-1)}:${lines.length}`;
        // The last message cut, the footer kept.
        await writeRawLines(f, [...lines.slice(0, -2), lines.at(-1)!], path);
        expect(await fatalAt(f)).toContain(footerLine.replace(`:${lines.length}`, `:${lines.length - 1}`));
        // The first message cut.
        await writeRawLines(f, lines.slice(1), path);
        expect((await fatalAt(f)).some((at) => at.startsWith("messages/segments/"))).toBe(true);
        // Whole again: clean.
        await writeRawLines(f, lines, path);
        expect(await fatalAt(f)).toEqual([]);
      }));

    it("one bit flipped in any field of a line is refused at that line", () =>
      fixture(async (f) => {
        await seeded(f, 3);
        const lines = await rawLines(f);
        const envelope = JSON.parse(lines[1]!) as Record<string, unknown>;
        const fields = Object.keys(envelope);
        expect(fields).toEqual(expect.arrayContaining(["sealed", "record_type", "sequence", "message_id", "revision", "key", "nonce", "data"]));
        for (const field of fields) {
          const value = envelope[field];
          const flipped = typeof value === "number"
            ? value ^ 1
            : String.fromCharCode((value as string).charCodeAt(0) ^ (field === "data" || field === "nonce" ? 2 : 1)) + (value as string).slice(1);
          await writeRawLines(f, [lines[0]!, JSON.stringify({ ...envelope, [field]: flipped }), lines[2]!]);
          expect(await fatalAt(f), field).toContain("messages/active.jsonl:2");
        }
        // And a bit flipped in the last byte of the ciphertext (the tag).
        const data = envelope.data as string;
        const last = data.replace(/=*$/, "");
        const tampered = `${last.slice(0, -1)}${last.at(-1) === "A" ? "Q" : "A"}${data.slice(last.length)}`;
        await writeRawLines(f, [lines[0]!, JSON.stringify({ ...envelope, data: tampered }), lines[2]!]);
        expect(await fatalAt(f)).toContain("messages/active.jsonl:2");
      }));

    it("a plaintext record planted in the store is refused, never read", () =>
      fixture(async (f) => {
        await seeded(f, 2);
        const planted = JSON.stringify({
          record_type: "message",
          sequence: 3,
          message_id: "m_planted",
          role: "user",
          created_at: "2026-12-02T13:00:00.000Z",
          parts: [{ sequence: 1, type: "text", text: "planted" }],
          revision: 99,
        });
        await f.raw.append(ACTIVE, utf8.encode(`${planted}\n`));
        expect(await fatalAt(f)).toEqual(["messages/active.jsonl:3"]);
        const session = await (await f.reopen()).sessions.open(REF);
        expect(session.active.map((m) => m.message_id)).not.toContain("m_planted");
        // A plaintext meta.json is not read either: its title never shows.
        await f.raw.replace(
          META,
          utf8.encode(
            JSON.stringify({
              schema_version: 1,
              session_id: "s1",
              agent_id: "a1",
              workspace_id: "w1",
              title: "planted title",
              created_at: "2026-12-02T13:00:00.000Z",
              updated_at: "2026-12-02T13:00:00.000Z",
              message_count: 2,
              history_bytes: 1,
              revision: 1,
            }),
          ),
        );
        const again = await (await f.reopen()).sessions.open(REF).then((session) => session, (error: unknown) => asError(error));
        if (!(again instanceof Error)) expect(again.meta.title).not.toBe("planted title");
      }));

    it("no key, or the wrong key: a typed error, and nothing is written", () =>
      fixture(async (f) => {
        await seeded(f, 2);
        const before = await f.dump();
        await expect(EncryptedStorage.open(f.raw, undefined)).rejects.toBeInstanceOf(KeyRequiredError);
        await expect(EncryptedStorage.open(f.raw, keyring({ k1: f.k2 }, "k1"))).rejects.toBeInstanceOf(WrongKeyError);
        await expect(EncryptedStorage.open(f.raw, keyring({ k2: f.k2 }, "k2"))).rejects.toBeInstanceOf(WrongKeyError);
        expect(await f.dump()).toEqual(before);
      }));

    it("a rotated key: data keys re-wrapped, history unchanged, new writes under a new data key, the old key refused", () =>
      fixture(async (f) => {
        await seeded(f, 3);
        const activeBefore = await f.raw.read(ACTIVE);
        const rotating = await f.reopen(keyring({ k1: f.k1, k2: f.k2 }, "k2"));
        expect(await rotating.storage.rotate()).toMatchObject({ kid: "k2", sessions: 1, dataKeys: 1 });
        expect(await f.raw.read(ACTIVE)).toEqual(activeBefore);
        const onlyNew = await f.reopen(keyring({ k2: f.k2 }, "k2"));
        const session = await onlyNew.sessions.open(REF);
        expect(session.active).toHaveLength(3);
        await session.append({ role: "user", parts: [{ type: "text", text: "after rotation" }] });
        await session.close();
        const keys = JSON.parse(text(await f.raw.read(`${DIR}/keys.json`))) as { keys: { id: string; kid: string; retired?: boolean }[] };
        expect(keys.keys.map((k) => [k.kid, k.retired ?? false])).toEqual([["k2", true], ["k2", false]]);
        const lines = await rawLines(f);
        expect((JSON.parse(lines.at(-1)!) as { key: string }).key).toBe(keys.keys[1]!.id);
        expect((JSON.parse(lines[0]!) as { key: string }).key).toBe(keys.keys[0]!.id);
        await expect(EncryptedStorage.open(f.raw, keyring({ k1: f.k1 }, "k1"))).rejects.toBeInstanceOf(WrongKeyError);
        expect(await fatalAt({ ...f, reopen: () => f.reopen(keyring({ k2: f.k2 }, "k2")) })).toEqual([]);
      }));

    it("deleting a session destroys its data keys: a copy of its lines no longer opens", () =>
      fixture(async (f) => {
        await seeded(f, 2);
        const copy = await f.raw.read(ACTIVE);
        await f.sessions.delete(REF);
        expect(await f.raw.read(`${DIR}/keys.json`)).toBeUndefined();
        await f.sessions.create(REF);
        await f.raw.replace(ACTIVE, copy!);
        expect(await fatalAt(f)).toEqual(["messages/active.jsonl:1", "messages/active.jsonl:2"]);
      }));

    it("torn-tail recovery: a torn envelope is cut, the next append lands after the last whole line", () =>
      fixture(async (f) => {
        await seeded(f, 3);
        const lines = await rawLines(f);
        await f.raw.append(ACTIVE, utf8.encode(lines[2]!.slice(0, 40)));
        const { sessions } = await f.reopen();
        const session = await sessions.open(REF);
        expect(session.diagnostics.map((d) => [d.code, d.fatal])).toEqual([["truncated_tail", false]]);
        await session.append({ role: "user", parts: [{ type: "text", text: "after the tear" }] });
        await session.close();
        const reopened = await (await f.reopen()).sessions.open(REF);
        expect(reopened.diagnostics).toEqual([]);
        expect(reopened.active.map((m) => m.sequence)).toEqual([1, 2, 3, 4]);
      }));

    it("a long final line is found from the tail without a refusal (the window grows past it)", () =>
      fixture(async (f) => {
        const session = await f.sessions.create({ ...REF });
        await session.append({ role: "user", parts: [{ type: "text", text: "short" }] });
        await session.append({ role: "user", parts: [{ type: "text", text: "x".repeat(200_000) }] });
        await session.close();
        const { sessions } = await f.reopen();
        const reopened = await sessions.open(REF);
        expect(reopened.revision).toBe(2);
        expect(reopened.active.map((m) => m.sequence)).toEqual([1, 2]);
        expect(f.refusals).toEqual([]);
      }));

    /** A store in the clear on `raw` (emptied first): s1 with a closed segment and an instruction, s2 archived. */
    async function plaintextStore(raw: StoragePort): Promise<void> {
      await raw.remove("agents");
      await raw.remove("encryption.json");
      const sessions = new Sessions({ storage: raw, defaults: { summarizer: new ScriptedSummarizer() } });
      const s1 = await sessions.create({ ...REF, title: `t ${SECRET}`, instruction: `i ${SECRET}` });
      for (let i = 1; i <= 6; i++) await s1.append({ role: "user", parts: [{ type: "text", text: `m${i} ${SECRET}` }] });
      await s1.compact();
      await s1.close();
      const s2 = await sessions.create({ ...OTHER, title: `t2 ${SECRET}` });
      await s2.append({ role: "user", parts: [{ type: "text", text: `only ${SECRET}` }] });
      await s2.close();
      await sessions.archive(OTHER);
    }

    /** What both sessions hold, as a host sees it. */
    async function contents(storage: StoragePort): Promise<unknown[]> {
      const sessions = new Sessions({ storage });
      return Promise.all(
        [REF, OTHER].map(async (ref, i) => {
          const session = await sessions.open(ref, { archived: i === 1 });
          return { meta: { ...session.meta, history_bytes: undefined }, portable: await session.exportPortable() };
        }),
      );
    }

    it("a store in the clear encrypted in place, killed at every mutating call and run again: finished, nothing lost, nothing left in the clear", ({ onTestFailed }) =>
      fixture(async (f) => {
        // A failure, a timeout included, says which crash point and which step it reached.
        let reached = "the run without a crash";
        onTestFailed(() => console.error(`encrypted in place: reached ${reached}`));
        const provider = keyring({ k1: f.k1 }, "k1");
        await plaintextStore(f.raw);
        const counting = new FaultyStorage(f.raw);
        expect((await EncryptedStorage.migrate(counting, provider)).sessions).toBe(2);
        const operations = counting.log.length;
        expect(operations).toBeGreaterThan(8);
        for (let crashAt = 1; crashAt <= operations; crashAt++) {
          const step = (name: string) => (reached = `crash point ${crashAt} of ${operations}: ${name}`);
          step("writing the store in the clear");
          await plaintextStore(f.raw);
          step("reading its contents");
          const before = await contents(f.raw);
          const faulty = new FaultyStorage(f.raw, { crashAt });
          step("migrating until the crash");
          await expect(EncryptedStorage.migrate(faulty, provider), `crash at ${crashAt}`).rejects.toBeInstanceOf(SimulatedCrashError);
          step(`reviving after the crash at ${faulty.crash?.operation.name} ${faulty.crash?.operation.path}`);
          const revived = await faulty.revive();
          // Unfinished: nobody opens it (the marker's flag goes last).
          step("opening the unfinished store");
          if (crashAt > 1) await expect(EncryptedStorage.open(revived, provider)).rejects.toBeInstanceOf(InvalidInputError);
          step("migrating again");
          await EncryptedStorage.migrate(revived, provider);
          step("comparing the contents");
          expect(await contents(await EncryptedStorage.open(revived, provider)), `crash at ${crashAt}`).toEqual(before);
          step("searching the files for the secret");
          expect(text(await f.dump()), `crash at ${crashAt}`).not.toContain(SECRET);
        }
        // Done: running it again changes nothing.
        reached = "migrating the finished store";
        expect(await EncryptedStorage.migrate(f.raw, provider)).toEqual({ sessions: 0, files: 0 });
      }));

    it("compaction, fork, export and repair work on an encrypted store", () =>
      fixture(async (f) => {
        await seeded(f, 8);
        const session = await f.sessions.open(REF);
        await session.compact();
        await session.close();
        const fork = await f.sessions.fork(REF, "s2");
        const [forkSegment] = await fork.segments();
        expect((await fork.readSegment(forkSegment!)).messages.map((m) => m.sequence)).toEqual([1, 2, 3, 4]);
        expect(fork.active.map((m) => m.sequence)).toEqual([5, 6, 7, 8]);
        const portable = await (await f.sessions.open(REF)).exportPortable();
        expect(JSON.stringify(portable)).toContain(`message 8 ${SECRET}`);
        expect(text(await f.dump())).not.toContain(SECRET);
        for (const ref of [REF, OTHER]) expect((await verifySession((await f.reopen()).sessions, ref)).diagnostics).toEqual([]);
        // A plaintext line planted, then repaired: it moves to the quarantine, the session writes again.
        await f.raw.append(ACTIVE, utf8.encode(`{"record_type":"message","planted":true}\n`));
        const damaged = await (await f.reopen()).sessions.open(REF);
        const report = await damaged.repair({ apply: true });
        expect(report.moves.length).toBeGreaterThan(0);
        await damaged.append({ role: "user", parts: [{ type: "text", text: "after repair" }] });
        expect(await fatalAt(f)).toEqual([]);
      }));
  });
}

interface Fixture {
  /** The backend under the decorator: what an attacker with the disk can change. */
  readonly raw: StoragePort;
  readonly storage: EncryptedStorage;
  readonly sessions: Sessions;
  readonly reopen: (keys?: KeyProvider) => Promise<{ storage: EncryptedStorage; sessions: Sessions }>;
  readonly refusals: SealRefusal[];
  readonly k1: CryptoKey;
  readonly k2: CryptoKey;
  readonly dump: () => Promise<Uint8Array>;
}
