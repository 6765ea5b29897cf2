/**
 * `revision` on the lines and a `meta.json` that may lag (docs/FORMAT.md): every committed
 * line ends with the revision its commit created; a lease holder writes `meta.json` only
 * when it is more than 1,024 commits or one second behind, at compaction and at close; an
 * open takes the greater of `meta.json`'s and the last line's revision, and a session
 * whose lines lack the field opens exactly as before. A handle that reclaims a dead
 * holder's lock never writes over lines it has not read.
 */
import { describe, expect, it, vi } from "vitest";
import { ExtractiveSummarizer, MemoryStorage, RevisionConflictError, Sessions, type WriterIdentity } from "../../core/mod.ts";

const text = (t: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text: t }] });
const decode = (bytes: Uint8Array | undefined) => new TextDecoder().decode(bytes);
const metaOf = async (storage: MemoryStorage, path: string) => JSON.parse(decode(await storage.read(path))) as { revision: number; message_count: number };

describe("revision on the lines, meta.json lazily", () => {
  it("every committed line ends with its commit's revision (per operation and held)", async () => {
    const storage = new MemoryStorage();
    const sessions = new Sessions({ storage });
    const session = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
    await session.append([text("a"), text("b")]);
    await session.hold();
    await session.append(text("c"));
    await session.close();
    const lines = decode(await storage.read(session.paths.active)).trimEnd().split("\n");
    expect(lines.map((l) => /"revision":(\d+)\}$/.exec(l)?.[1])).toEqual(["1", "1", "2"]);
    expect(session.active.map((m) => "revision" in m)).toEqual([false, false, false]); // a line field, not the host's
  });

  it("a lease leaves meta.json behind; a reader takes the lines' revision with no diagnostic; close() writes it", async () => {
    const storage = new MemoryStorage();
    const sessions = new Sessions({ storage, clock: () => 1_000 });
    const held = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" }, { hold: true });
    for (let i = 0; i < 5; i++) await held.append(text(`m${i}`));
    expect(await metaOf(storage, held.paths.meta)).toMatchObject({ revision: 0, message_count: 0 });
    const reader = await new Sessions({ storage }).open("a1/w1/s1");
    expect(reader.diagnostics).toEqual([]);
    expect(reader.revision).toBe(5);
    expect(reader.meta).toMatchObject({ message_count: 5, revision: 5 });
    expect(reader.meta.history_bytes).toBe((await storage.readTail(held.paths.active, 0))!.size);
    await held.close();
    expect(await metaOf(storage, held.paths.meta)).toMatchObject({ revision: 5, message_count: 5 });
  });

  it("writes meta.json once 1,024 commits or one second would be left out, and at compaction", async () => {
    const storage = new MemoryStorage();
    let now = 10_000;
    const sessions = new Sessions({ storage, clock: () => now, defaults: { summarizer: new ExtractiveSummarizer() } });
    const held = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" }, { hold: true });
    // The one-second catch-up is a wall-clock timer: held back here, so that 1,024 commits on a
    // slow store (PostgreSQL under load) are counted, not timed. Only `setTimeout` is faked.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      for (let i = 1; i <= 1024; i++) await held.append(text(`m${i}`));
      expect((await metaOf(storage, held.paths.meta)).revision).toBe(0);
    } finally {
      vi.useRealTimers();
    }
    await held.append(text("m1025"));
    expect((await metaOf(storage, held.paths.meta)).revision).toBe(1025);
    await held.append(text("m1026"));
    now += 1_000;
    await held.append(text("m1027"));
    expect((await metaOf(storage, held.paths.meta)).revision).toBe(1027);
    await held.append(text("m1028"));
    await held.compact();
    expect((await metaOf(storage, held.paths.meta)).revision).toBe(1029);
    await held.close();
  });

  it("catches meta.json up one second after a lagging commit, with no further commit", async () => {
    const storage = new MemoryStorage();
    const held = await new Sessions({ storage }).create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" }, { hold: true });
    await held.append(text("only"));
    expect((await metaOf(storage, held.paths.meta)).revision).toBe(0);
    await vi.waitFor(async () => expect((await metaOf(storage, held.paths.meta)).revision).toBe(1), { timeout: 15_000, interval: 50 });
    await held.close();
  });

  it("opens a session whose lines carry no revision (written before this change) exactly as before", async () => {
    const storage = new MemoryStorage();
    const sessions = new Sessions({ storage });
    const session = await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
    const old = (seq: number) =>
      JSON.stringify({
        record_type: "message",
        sequence: seq,
        message_id: `m${seq}`,
        role: "user",
        created_at: "2026-01-01T00:00:00.000Z",
        parts: [{ sequence: 1, type: "text", text: `old ${seq}` }],
      });
    await storage.replace(session.paths.active, new TextEncoder().encode(`${old(1)}\n${old(2)}\n`));
    const meta = await metaOf(storage, session.paths.meta);
    await storage.replace(
      session.paths.meta,
      new TextEncoder().encode(
        JSON.stringify({ ...meta, message_count: 2, revision: 7, history_bytes: (await storage.readTail(session.paths.active, 0))!.size }),
      ),
    );
    const reopened = await sessions.open("a1/w1/s1");
    expect(reopened.diagnostics).toEqual([]);
    expect(reopened.revision).toBe(7);
    await expect(reopened.append(text("new"))).resolves.toMatchObject({ sequences: [3], revision: 8 });
  });

  it("a handle that takes over a dead holder's lock refuses to write over lines it has not read", async () => {
    const storage = new MemoryStorage();
    const me: WriterIdentity = { pid: 1, hostname: "h", runtime: "node", bootId: "b", pidNamespace: "pid:[4026531836]" };
    const dead: WriterIdentity = { pid: 2, hostname: "h", runtime: "node", bootId: "b", pidNamespace: "pid:[4026531836]" };
    const probe = { processStartTime: (pid: number) => (pid === 1 ? 0 : null) };
    const stale = await new Sessions({ storage, identity: me, probe }).create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
    // Another process holds the session, commits without writing meta.json, and dies (its lock stays).
    const view = new Proxy(storage, { get: (t, k) => (typeof Reflect.get(t, k) === "function" ? Reflect.get(t, k).bind(t) : Reflect.get(t, k)) });
    const holder = await new Sessions({ storage: view, identity: dead, clock: () => 0 }).open("a1/w1/s1", { hold: true });
    await holder.append(text("from the dead holder"));
    const refused = await stale.append(text("would reuse sequence 1")).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RevisionConflictError);
    await stale.reload();
    await expect(stale.append(text("after reading it"))).resolves.toMatchObject({ sequences: [2] });
  });

  // A kill inside a batch append leaves its first lines whole: they carry the batch's
  // revision, yet the commit never happened (recovery rule 1 drops them). Cut mid-line
  // and cut exactly at a line's end.
  for (const cut of ["inside the third line", "at the second line's end"] as const) {
    it(`a handle that takes over a dead holder's lock after a torn batch (${cut}) writes: the torn lines are no commit`, async () => {
      const storage = new MemoryStorage();
      const me: WriterIdentity = { pid: 1, hostname: "h", runtime: "node", bootId: "b", pidNamespace: "pid:[4026531836]" };
      const dead: WriterIdentity = { pid: 2, hostname: "h", runtime: "node", bootId: "b", pidNamespace: "pid:[4026531836]" };
      const probe = { processStartTime: (pid: number) => (pid === 1 ? 0 : null) };
      await new Sessions({ storage }).create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" }).then((s) => s.append(text("a")));
      const holder = await new Sessions({ storage, identity: dead }).open("a1/w1/s1", { hold: true });
      const before = (await storage.read(holder.paths.active))!.length;
      await holder.append([text("b"), text("c"), text("d")]);
      const bytes = (await storage.read(holder.paths.active))!;
      const ends = [...bytes.keys()].filter((i) => bytes[i] === 0x0a && i >= before);
      const keep = cut === "at the second line's end" ? ends[1]! + 1 : ends[1]! + 10;
      await storage.replace(holder.paths.active, bytes.subarray(0, keep));
      const session = await new Sessions({ storage, identity: me, probe }).open("a1/w1/s1");
      // A cut inside a line is reported twice (the torn line, then the batch it left short); both are the tail.
      const codes = session.diagnostics.map((d) => d.code);
      expect(codes.length).toBeGreaterThan(0);
      expect(new Set(codes)).toEqual(new Set(["truncated_tail"]));
      expect(session.revision).toBe(1);
      await expect(session.append(text("after the crash"))).resolves.toEqual({ sequences: [2], revision: 2 });
      const lines = decode(await storage.read(session.paths.active)).trimEnd().split("\n");
      expect(lines.map((l) => (JSON.parse(l) as { parts: { text: string }[] }).parts[0]!.text)).toEqual(["a", "after the crash"]);
    });
  }
});
