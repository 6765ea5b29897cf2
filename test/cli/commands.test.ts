/**
 * Every command end to end, in-process through main(), against a temporary root:
 * the JSON shapes of docs/CLI.md and the readable text.
 */
import { readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, expectOk, json, lockContent, missingRoot, put, seed, sessionDir, tempDir } from "./support.ts";

const REF = "a1/w1/s1";
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe("new, append, ls", () => {
  it("new creates an empty session and prints its meta", async () => {
    const root = await missingRoot();
    const result = expectOk(await cli(root, ["--json", "new", REF, "--title", "Fix the build"]));
    const meta = json(result);
    expect(meta).toMatchObject({
      schema_version: 1,
      agent_id: "a1",
      workspace_id: "w1",
      session_id: "s1",
      title: "Fix the build",
      message_count: 0,
      history_bytes: 0,
      revision: 0,
    });
    expect(meta.created_at).toMatch(ISO_MS);
    expect(result.stderr).toBe("");
    const onDisk = JSON.parse(await readFile(join(sessionDir(root, REF), "meta.json"), "utf8"));
    expect(onDisk).toEqual(meta);
    expect((await cli(root, ["new", REF])).status).toBe(4);
    expect(expectOk(await cli(root, ["new", "a1/w1/s2"])).stdout).toBe("created a1/w1/s2 (revision 0)\n");
  });

  it("append commits one text message and prints sequence and revision", async () => {
    const root = await missingRoot();
    await seed(root, REF, 0);
    expect(json(expectOk(await cli(root, ["--json", "append", REF, "--role", "user", "--text", "hello"])))).toEqual({ sequence: 1, revision: 1 });
    expect(json(expectOk(await cli(root, ["append", REF, "--json", "--role", "assistant", "--text", "hi!"])))).toEqual({ sequence: 2, revision: 2 });
    expect(expectOk(await cli(root, ["append", REF, "--role", "user", "--text", "--json"])).stdout).toBe("appended #3 to a1/w1/s1 (revision 3)\n");
    const lines = (await readFile(join(sessionDir(root, REF), "messages/active.jsonl"), "utf8")).trimEnd().split("\n").map((l) => JSON.parse(l));
    expect(lines.map((m) => [m.sequence, m.role, m.parts[0].text, m.status])).toEqual([
      [1, "user", "hello", undefined],
      [2, "assistant", "hi!", "completed"],
      [3, "user", "--json", undefined],
    ]);
  });

  it("append first finishes a live draft as stopped, in the same commit", async () => {
    const root = await missingRoot();
    await seed(root, REF, 1);
    const draft = {
      record_type: "message",
      sequence: 2,
      message_id: "m_draft",
      role: "assistant",
      created_at: "2026-12-02T13:00:00.000Z",
      status: "streaming",
      parts: [{ sequence: 1, type: "text", text: "partial ans" }],
    };
    await put(join(sessionDir(root, REF), "messages/assistant_message.json"), JSON.stringify(draft));
    const shown = json(expectOk(await cli(root, ["--json", "show", REF])));
    expect(shown.draft).toEqual({ message_id: "m_draft", sequence: 2, parts: [{ sequence: 1, type: "text", text: "partial ans" }] });
    expect(json(expectOk(await cli(root, ["--json", "append", REF, "--role", "user", "--text", "go on"])))).toEqual({ sequence: 3, revision: 2 });
    const listed = json(expectOk(await cli(root, ["--json", "messages", REF])));
    expect(
      listed.map((
        m: { sequence: number; message_id: string; role: string; status?: string },
      ) => [m.sequence, m.message_id === "m_draft" ? "draft" : m.role, m.status]),
    ).toEqual([
      [1, "user", undefined],
      [2, "draft", "stopped"],
      [3, "user", undefined],
    ]);
    expect(await readdir(join(sessionDir(root, REF), "messages"))).not.toContain("assistant_message.json");
  });

  it("append refuses a bad role, a missing text and an archived session", async () => {
    const root = await missingRoot();
    await seed(root, REF, 0);
    const badRole = await cli(root, ["append", REF, "--role", "system", "--text", "x"]);
    expect(badRole.status).toBe(2);
    expect(badRole.stderr).toMatch(/^error\[usage\]: append: --role must be user or assistant/);
    expect((await cli(root, ["append", REF, "--role", "user"])).status).toBe(2);
    expectOk(await cli(root, ["archive", REF]));
    const archived = await cli(root, ["append", REF, "--role", "user", "--text", "x"]);
    expect(archived.status).toBe(4);
    expect(archived.stderr).toBe("error[invalid-input]: a1/w1/s1 is archived; archived sessions are read-only\n");
  });

  it("ls lists metas newest first, filters by agent, workspace and archived, and prints a table", async () => {
    const root = await missingRoot();
    await seed(root, "a1/w1/s1", 2, "First");
    await seed(root, "a1/w2/s2", 1, "Second");
    await seed(root, "a2/w1/s3", 0, "Third");
    const all = json(expectOk(await cli(root, ["--json", "ls"])));
    expect(all.map((m: { session_id: string }) => m.session_id)).toEqual(["s3", "s2", "s1"]);
    expect(all[2]).toMatchObject({ schema_version: 1, title: "First", message_count: 2, revision: 2 });
    expect(json(await cli(root, ["--json", "ls", "--agent", "a1"])).map((m: { session_id: string }) => m.session_id)).toEqual(["s2", "s1"]);
    expect(json(await cli(root, ["--json", "ls", "--workspace", "w1"])).map((m: { session_id: string }) => m.session_id)).toEqual(["s3", "s1"]);
    expect(json(await cli(root, ["--json", "ls", "--archived"]))).toEqual([]);
    expectOk(await cli(root, ["archive", "a1/w2/s2"]));
    expect(json(await cli(root, ["--json", "ls", "--archived"])).map((m: { session_id: string }) => m.session_id)).toEqual(["s2"]);
    const text = expectOk(await cli(root, ["ls", "--agent", "a1"])).stdout.split("\n");
    expect(text[0]).toMatch(/^REF\s+TITLE\s+MESSAGES\s+REVISION\s+UPDATED$/);
    expect(text[1]).toMatch(/^a1\/w1\/s1\s+First\s+2\s+2\s+\d{4}-/);
    expect((await cli(root, ["ls", "--agent", "../x"])).status).toBe(4);
  });
});

describe("show, compose, messages", () => {
  it("show reports meta, segments with summary_chars, active, draft and diagnostics", async () => {
    const root = await missingRoot();
    await seed(root, REF, 6);
    expectOk(await cli(root, ["compact", REF]));
    expectOk(await cli(root, ["append", REF, "--role", "user", "--text", "more"]));
    expectOk(await cli(root, ["compact", REF]));
    const report = json(expectOk(await cli(root, ["--json", "show", REF])));
    expect(Object.keys(report)).toEqual(["meta", "segments", "active", "draft", "diagnostics"]);
    expect(report.meta).toMatchObject({ session_id: "s1", message_count: 7, revision: 9 });
    const dir = join(sessionDir(root, REF), "messages/segments");
    const names = (await readdir(dir)).sort();
    expect(names).toEqual(["000000000001-000000000004.jsonl", "000000000005-000000000006.jsonl"]);
    const footers = await Promise.all(names.map(async (n) => JSON.parse((await readFile(join(dir, n), "utf8")).trimEnd().split("\n").at(-1)!)));
    expect(report.segments).toEqual([
      { start: 1, end: 4, summary_chars: footers[0].text.length },
      { start: 5, end: 6, summary_chars: footers[1].text.length },
    ]);
    expect(report.active).toEqual({ count: 1, first_sequence: 7, last_sequence: 7 });
    expect(report.draft).toBeNull();
    expect(report.diagnostics).toEqual([]);
    const text = expectOk(await cli(root, ["show", REF])).stdout;
    expect(text).toContain('a1/w1/s1  "Seeded"');
    expect(text).toContain(`1-4  summary ${footers[0].text.length} chars`);
    expect(text).toContain("active: 1 message (#7-#7)");
    expect(text).toContain("diagnostics: none");
  });

  it("show of an empty session and of an archived one", async () => {
    const root = await missingRoot();
    await seed(root, REF, 0);
    expect(json(expectOk(await cli(root, ["--json", "show", REF])))).toMatchObject({
      segments: [],
      active: { count: 0, first_sequence: null, last_sequence: null },
      draft: null,
      diagnostics: [],
    });
    expectOk(await cli(root, ["archive", REF]));
    expect(expectOk(await cli(root, ["show", REF])).stdout).toContain("(archived)");
  });

  it("compose prints system, summary and Active exactly as the next request reads them", async () => {
    const root = await missingRoot();
    await put(
      join(root, "agents/a1/agent.jsonc"),
      '{\n  // the agent\n  "instruction": "Be brief.",\n  "plugins": [{ "name": "git", "instruction": "Use git." }],\n}\n',
    );
    await seed(root, REF, 4);
    const before = json(expectOk(await cli(root, ["--json", "compose", REF])));
    expect(Object.keys(before)).toEqual(["system", "summary", "messages"]);
    expect(before.system).toBe("Be brief.\n\n## git\nUse git.");
    expect(before.summary).toBeNull();
    expect(before.messages.map((m: { sequence: number }) => m.sequence)).toEqual([1, 2, 3, 4]);
    expectOk(await cli(root, ["compact", REF]));
    const after = json(expectOk(await cli(root, ["--json", "compose", REF])));
    expect(after.summary).toContain("message 1");
    expect(after.messages.map((m: { parts: { text?: string }[] }) => m.parts[0]!.text)).toEqual(["message 3", "message 4"]);
    const text = expectOk(await cli(root, ["compose", REF])).stdout;
    expect(text).toContain("## system\nBe brief.");
    expect(text).toContain("#3 user: message 3");
    // instruction.md, when present, is the system text.
    await writeFile(join(sessionDir(root, REF), "instruction.md"), "Snapshot instruction.");
    expect(json(await cli(root, ["--json", "compose", REF])).system).toBe("Snapshot instruction.");
  });

  it("compose keeps provider context only for the newest assistant message's identity", async () => {
    const root = await missingRoot();
    await seed(root, REF, 0);
    const at = "2026-12-02T13:00:00.000Z";
    const ctx = (n: number, model: string) => ({ sequence: n, type: "provider-context", provider: "openai", api: "responses", model, data: { id: model } });
    const records = [
      { record_type: "message", sequence: 1, message_id: "m1", role: "user", created_at: at, parts: [{ sequence: 1, type: "text", text: "q" }] },
      {
        record_type: "message",
        sequence: 2,
        message_id: "m2",
        role: "assistant",
        created_at: at,
        status: "completed",
        provider: { provider: "openai", api: "responses", model: "old" },
        parts: [{ sequence: 1, type: "text", text: "a" }, ctx(2, "old")],
      },
      {
        record_type: "message",
        sequence: 3,
        message_id: "m3",
        role: "assistant",
        created_at: at,
        status: "completed",
        provider: { provider: "openai", api: "responses", model: "new" },
        parts: [{ sequence: 1, type: "text", text: "b" }, ctx(2, "new")],
      },
    ];
    await put(join(sessionDir(root, REF), "messages/active.jsonl"), records.map((r) => `${JSON.stringify(r)}\n`).join(""));
    const composed = json(expectOk(await cli(root, ["--json", "compose", REF])));
    expect(composed.messages[1].parts.map((p: { type: string }) => p.type)).toEqual(["text"]);
    expect(composed.messages[2].parts.map((p: { type: string }) => p.type)).toEqual(["text", "provider-context"]);
    const text = expectOk(await cli(root, ["compose", REF])).stdout;
    expect(text).toContain("composed for openai/responses/new");
    expect(text).toContain("provider context of openai/responses/old in #2 left out");
  });

  it("messages pages Active and then whole segments with --before", async () => {
    const root = await missingRoot();
    await seed(root, REF, 6);
    expectOk(await cli(root, ["compact", REF]));
    const active = json(expectOk(await cli(root, ["--json", "messages", REF])));
    // The compaction cut on the turn boundary nearest floor(6/2): Active starts at a user message.
    expect(active.map((m: { sequence: number }) => m.sequence)).toEqual([5, 6]);
    expect(active[0]).toMatchObject({ record_type: "message", role: "user", parts: [{ sequence: 1, type: "text", text: "message 5" }] });
    expect(json(expectOk(await cli(root, ["--json", "messages", REF, "--before", "5"]))).map((m: { sequence: number }) => m.sequence)).toEqual([1, 2, 3, 4]);
    expect(json(expectOk(await cli(root, ["--json", "messages", REF, "--before", "1"])))).toEqual([]);
    expect(expectOk(await cli(root, ["messages", REF, "--before", "5"])).stdout).toBe(
      "#1 user: message 1\n#2 assistant: message 2\n#3 user: message 3\n#4 assistant: message 4\n",
    );
    const bad = await cli(root, ["messages", REF, "--before", "0"]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/^error\[usage\]: messages: --before expects a positive integer/);
  });
});

describe("compact, fork, archive, unlock, verify", () => {
  it("compact prints the CompactionOutcome; with < 2 messages nothing changes", async () => {
    const root = await missingRoot();
    await seed(root, REF, 1);
    expect(json(expectOk(await cli(root, ["--json", "compact", REF])))).toEqual({ revision: 1, removedMessages: 0, keptMessages: 1, segment: null });
    expectOk(await cli(root, ["append", REF, "--role", "assistant", "--text", "an answer. with two sentences"]));
    expectOk(await cli(root, ["append", REF, "--role", "user", "--text", "third"]));
    const outcome = json(expectOk(await cli(root, ["--json", "compact", REF])));
    expect(outcome).toMatchObject({ revision: 4, removedMessages: 2, keptMessages: 1, segment: { start: 1, end: 2 } });
    expect(outcome.summaryChars).toBeGreaterThan(0);
    expect(typeof outcome.beforeTokens).toBe("number");
    expect(typeof outcome.afterTokens).toBe("number");
  });

  it("compact uses the agent's configured summarizer (extractive max_chars)", async () => {
    const root = await missingRoot();
    await put(join(root, "agents/a1/agent.jsonc"), '{ "summarizer": { "kind": "extractive", "max_chars": 20 } }');
    await seed(root, REF, 0);
    expectOk(await cli(root, ["append", REF, "--role", "user", "--text", "x".repeat(500)]));
    expectOk(await cli(root, ["append", REF, "--role", "assistant", "--text", "y".repeat(500)]));
    expect(json(expectOk(await cli(root, ["--json", "compact", REF]))).summaryChars).toBeLessThanOrEqual(20);
  });

  it("fork copies the full history into a new session and prints its meta", async () => {
    const root = await missingRoot();
    await seed(root, REF, 6);
    expectOk(await cli(root, ["compact", REF]));
    const meta = json(expectOk(await cli(root, ["--json", "fork", REF, "--as", "s2"])));
    expect(meta).toMatchObject({
      session_id: "s2",
      agent_id: "a1",
      workspace_id: "w1",
      message_count: 6,
      forked_from: { session_id: "s1", through_sequence: 6 },
    });
    const source = json(await cli(root, ["--json", "show", REF]));
    const copy = json(await cli(root, ["--json", "show", "a1/w1/s2"]));
    expect(copy.segments).toEqual(source.segments);
    expect(copy.active).toEqual(source.active);
    expect(json(await cli(root, ["--json", "messages", "a1/w1/s2", "--before", "4"]))).toEqual(
      json(await cli(root, ["--json", "messages", REF, "--before", "4"])),
    );
    expect((await cli(root, ["fork", REF, "--as", "s2"])).status).toBe(4);
    const missingAs = await cli(root, ["fork", REF]);
    expect(missingAs.status).toBe(2);
    expect(missingAs.stderr).toBe("error[usage]: fork: missing --as SESSION_ID\n");
    expect((await cli(root, ["fork", REF, "--as", "../evil"])).status).toBe(4);
  });

  it("fork draws a progress bar on stderr only when stderr is a terminal", async () => {
    const root = await missingRoot();
    await seed(root, REF, 4);
    expectOk(await cli(root, ["compact", REF]));
    const tty = expectOk(await cli(root, ["fork", REF, "--as", "s2"], { stderrIsTTY: true }));
    expect(tty.stderr).toContain("\rfork [");
    expect(tty.stderr).toContain("2/2");
    const piped = expectOk(await cli(root, ["fork", REF, "--as", "s3"]));
    expect(piped.stderr).toBe("");
  });

  it("a count of one is singular in the readable text (fork, import, show, export)", async () => {
    const root = await missingRoot();
    await seed(root, REF, 1);
    expect(expectOk(await cli(root, ["fork", REF, "--as", "s2"])).stdout).toBe("forked a1/w1/s1 -> a1/w1/s2 (1 message, revision 1)\n");
    expect(expectOk(await cli(root, ["show", REF])).stdout).toMatch(/^meta: revision 1, 1 message, \d+ history bytes, updated /m);
    const file = join(await tempDir(), "one.json");
    expect(expectOk(await cli(root, ["export", REF, "--to", "rho-snapshot", "--out", file])).stdout).toBe(`exported 1 record of ${REF} to ${file}\n`);
    expect(expectOk(await cli(root, ["import", file, "--from", "rho-snapshot", "--into", "a1/w1/back"])).stdout).toBe(
      "imported 1 message from one.json into a1/w1/back (revision 1)\n",
    );
    expect(expectOk(await cli(root, ["fork", "a1/w1/back", "--as", "s3"])).stdout).toContain("(1 message, ");
    await seed(root, "a1/w1/two", 2);
    expect(expectOk(await cli(root, ["fork", "a1/w1/two", "--as", "s4"])).stdout).toContain("(2 messages, revision 2)");
  });

  it("archive moves the session to archived-sessions/ and prints the archived meta", async () => {
    const root = await missingRoot();
    await seed(root, REF, 2);
    const meta = json(expectOk(await cli(root, ["--json", "archive", REF])));
    expect(meta).toMatchObject({ session_id: "s1", message_count: 2 });
    expect(await readdir(sessionDir(root, REF, true))).toEqual(expect.arrayContaining(["meta.json", "messages"]));
    expect((await cli(root, ["--json", "ls"])).stdout).toBe("[]\n");
    expect((await cli(root, ["archive", REF])).status).toBe(4);
    expect((await cli(root, ["archive", "a1/w1/nope"])).status).toBe(4);
  });

  it("delete removes every file of the session wherever it is (--archived: only an archived copy), naming them; another writer's lock refuses it", async () => {
    const root = await missingRoot();
    await seed(root, REF, 2);
    await seed(root, "a1/w1/s2", 1);
    expectOk(await cli(root, ["archive", "a1/w1/s2"]));
    const lockPath = join(sessionDir(root, REF), "writer.lock");
    await writeFile(lockPath, lockContent(4242, "other-host"));
    const locked = await cli(root, ["delete", REF]);
    expect(locked.status).toBe(3);
    expect(await readdir(sessionDir(root, REF))).toContain("meta.json");
    await rm(lockPath);
    expect((await cli(root, ["delete", REF, "--archived"])).status, "no archived copy").toBe(4);
    const deleted = json(expectOk(await cli(root, ["--json", "delete", REF])));
    expect(deleted).toMatchObject({ ref: REF, places: ["live"] });
    expect(deleted.removed).toEqual(expect.arrayContaining(["agents/a1/workspaces/w1/sessions/s1/meta.json"]));
    await expect(readdir(sessionDir(root, REF))).rejects.toMatchObject({ code: "ENOENT" });
    expect((await cli(root, ["show", REF])).status).toBe(4);
    expect(expectOk(await cli(root, ["delete", "a1/w1/s2"])).stdout).toMatch(/^deleted a1\/w1\/s2 \(archived: \d+ files\)\n$/);
    await expect(readdir(sessionDir(root, "a1/w1/s2", true))).rejects.toMatchObject({ code: "ENOENT" });
    const none = await cli(root, ["delete", "a1/w1/nope"]);
    expect(none.status).toBe(4);
    expect(none.stderr).toMatch(/^error\[not-found\]: /);
  });

  it("unlock prints the owner, removes the lock and outputs its content; needs --force", async () => {
    const root = await missingRoot();
    await seed(root, REF, 1);
    const lockPath = join(sessionDir(root, REF), "writer.lock");
    await writeFile(lockPath, lockContent(4242, "other-host"));
    const refused = await cli(root, ["unlock", REF]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(/^error\[usage\]: unlock: removing a writer lock needs --force/);
    expect(await readFile(lockPath, "utf8")).toBe(lockContent(4242, "other-host"));
    const text = expectOk(await cli(root, ["unlock", REF, "--force"]));
    expect(text.stderr).toBe('writer.lock of a1/w1/s1: pid 4242 on other-host (node) for "append" since 2026-12-02T13:00:00.000Z\n');
    expect(text.stdout).toBe("removed agents/a1/workspaces/w1/sessions/s1/writer.lock\n");
    expect(await readdir(sessionDir(root, REF))).not.toContain("writer.lock");
    await writeFile(lockPath, lockContent(7, "h"));
    const viaJson = expectOk(await cli(root, ["--json", "unlock", REF, "--force"]));
    expect(json(viaJson)).toEqual(JSON.parse(lockContent(7, "h")));
    const none = await cli(root, ["unlock", REF, "--force"]);
    expect(none.status).toBe(4);
    expect(none.stderr).toMatch(/^error\[not-found\]: .*writer\.lock: a1\/w1\/s1 has no writer\.lock/);
    // The session is writable again.
    expectOk(await cli(root, ["append", REF, "--role", "user", "--text", "after unlock"]));
  });

  it("verify checks every session, live and archived, and reports ok ones with no diagnostics", async () => {
    const root = await missingRoot();
    await seed(root, "a1/w1/s1", 6);
    expectOk(await cli(root, ["compact", "a1/w1/s1"]));
    expectOk(await cli(root, ["compact", "a1/w1/s1"]));
    await seed(root, "a1/w1/s2", 1);
    expectOk(await cli(root, ["fork", "a1/w1/s1", "--as", "s3"]));
    await seed(root, "a2/w9/s4", 2);
    expectOk(await cli(root, ["archive", "a2/w9/s4"]));
    const report = json(expectOk(await cli(root, ["--json", "verify"])));
    expect(report).toEqual({
      sessions: [
        { ref: "a1/w1/s1", ok: true, diagnostics: [] },
        { ref: "a1/w1/s2", ok: true, diagnostics: [] },
        { ref: "a1/w1/s3", ok: true, diagnostics: [] },
        { ref: "a2/w9/s4", ok: true, diagnostics: [], archived: true },
      ],
    });
    expect(json(expectOk(await cli(root, ["--json", "verify", "a1/w1/s2"])))).toEqual({ sessions: [{ ref: "a1/w1/s2", ok: true, diagnostics: [] }] });
    const text = expectOk(await cli(root, ["verify"])).stdout;
    expect(text).toContain("ok   a1/w1/s1\n");
    expect(text).toContain("4 sessions checked, all ok");
    const tty = expectOk(await cli(root, ["verify"], { stderrIsTTY: true }));
    expect(tty.stderr).toContain("\rverify [");
    expect(tty.stderr).toContain("4/4");
    expect((await cli(root, ["verify"])).stderr).toBe("");
  });

  it("verify reports a leftover writer.lock as a note, not a failure", async () => {
    const root = await missingRoot();
    await seed(root, REF, 1);
    await writeFile(join(sessionDir(root, REF), "writer.lock"), lockContent(99, "gone-host"));
    const report = json(expectOk(await cli(root, ["--json", "verify", REF])));
    expect(report.sessions[0].ok).toBe(true);
    expect(report.sessions[0].diagnostics).toEqual([
      expect.objectContaining({
        file: "writer.lock",
        line: null,
        code: "writer_locked",
        fatal: false,
        message: expect.stringContaining("pid 99 on gone-host"),
      }),
    ]);
  });
});
