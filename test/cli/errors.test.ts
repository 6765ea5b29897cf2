/**
 * Every exit status of docs/CLI.md and the error line / JSON error shapes: usage, hostile
 * REFs, locks, corruption found by verify / compose / messages, unknown schemas, bad
 * agent files and failures of the store itself.
 */
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ErrorCode } from "../../core/mod.ts";
import { exitStatusOf } from "../../runtime-node/cli/exit.ts";
import { cli, cliRaw, expectOk, json, lockContent, missingRoot, put, seed, sessionDir, snapshot } from "./support.ts";

const REF = "a1/w1/s1";
const ERROR_LINE = /^error\[[a-z-]+\]: \S.*\n$/;

describe("usage (exit 2) and help (exit 0)", () => {
  it("--help and COMMAND --help print usage and exit 0", async () => {
    const root = await missingRoot();
    for (const argv of [["--help"], ["-h"], ["help"]]) {
      const result = await cli(root, argv);
      expect(result.status).toBe(0);
      expect(result.stdout).toContain("Usage: sessionfold [--root DIR] [--json] COMMAND");
      for (const name of ["ls", "show", "compose", "messages", "verify", "new", "append", "compact", "fork", "archive", "unlock"]) {
        expect(result.stdout).toMatch(new RegExp(`^  ${name}\\b`, "m"));
      }
    }
    for (const argv of [["show", "--help"], ["--help", "show"], ["show", "-h"], ["help", "show"]]) {
      const result = await cli(root, argv);
      expect(result.status).toBe(0);
      expect(result.stdout).toMatch(/^Usage: sessionfold \[--root DIR\] \[--json\] show REF\n/);
    }
    expect((await cli(root, ["append", "--help"])).stdout).toContain("--role user|assistant");
    expect(await snapshot(root)).toBeNull();
  });

  it.each([
    [[], /^error\[usage\]: missing COMMAND/],
    [["frobnicate"], /^error\[usage\]: unknown command "frobnicate"/],
    [["--verbose", "ls"], /^error\[usage\]: unknown option "--verbose"/],
    [["ls", "--bogus"], /^error\[usage\]: ls: unknown option "--bogus"/],
    [["ls", "extra"], /^error\[usage\]: ls: unexpected argument "extra"/],
    [["show"], /^error\[usage\]: show: missing REF/],
    [["messages", REF, "--before"], /^error\[usage\]: messages: option --before needs a value/],
    [["new", REF, "--title", "a", "--title", "b"], /^error\[usage\]: new: option --title is given twice/],
    [["unlock", REF], /^error\[usage\]: unlock: removing a writer lock needs --force/],
    [["append", REF, "--text", "x"], /^error\[usage\]: append: missing --role/],
    [["help", "nope"], /^error\[usage\]: unknown command "nope"/],
    [["-x", "ls"], /^error\[usage\]: unknown option "-x" \(see sessionfold --help\)$/m],
    [["--title", "t", "new", REF], /^error\[usage\]: unknown option "--title"/],
    [["ls", "--bogus=1"], /^error\[usage\]: ls: unknown option "--bogus=1" \(see sessionfold ls --help\)$/m],
    [["ls", "-x"], /^error\[usage\]: ls: unknown option "-x"/],
    [["ls", "-abc"], /^error\[usage\]: ls: unknown option "-abc"/],
    [["new", REF, "--title=a", "--title", "b"], /^error\[usage\]: new: option --title is given twice/],
    [["unlock", REF, "--force=yes"], /^error\[usage\]: unlock: option --force takes no value/],
    [["unlock", REF, "--force", "--force"], /^error\[usage\]: unlock: option --force is given twice/],
    [["append", REF, "--role", "user", "--text"], /^error\[usage\]: append: option --text needs a value T$/m],
    [["messages", REF, "--before"], /^error\[usage\]: messages: option --before needs a value SEQ$/m],
    [["show", REF, "extra"], /^error\[usage\]: show: unexpected argument "extra" \(see sessionfold show --help\)$/m],
    [["verify", REF, "extra"], /^error\[usage\]: verify: unexpected argument "extra"/],
    [["import", "f.jsonl"], /^error\[usage\]: import: missing --into/],
    [["--store"], /^error\[usage\]: option --store needs a value URL \(postgres:\/\/…\)$/m],
    [["ls", "--store="], /^error\[usage\]: option --store needs a value URL/],
    [["ls", "--root"], /^error\[usage\]: option --root needs a value DIR$/m],
    [["ls", "--root="], /^error\[usage\]: option --root needs a value DIR$/m],
    [["--"], /^error\[usage\]: missing COMMAND/],
  ])("%j is bad usage: exit 2, one error line", async (argv, line) => {
    const root = await missingRoot();
    const result = await cli(root, argv as string[]);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(ERROR_LINE);
    expect(result.stderr).toMatch(line);
    expect(result.stdout).toBe("");
    expect(await snapshot(root)).toBeNull();
  });

  it("--json after the command also shapes a usage error; --root=DIR is accepted", async () => {
    const root = await missingRoot();
    const result = await cli(root, ["ls", "--bogus", "--json"]);
    expect(result.status).toBe(2);
    expect(json(result).error).toMatchObject({ code: "usage", option: "--bogus" });
    const created = await cliRaw([`--root=${root}`, "new", "a/b/c", "--json"]);
    expect(created.status).toBe(0);
    expect(json(created).session_id).toBe("c");
  });

  it("an option's value may look like an option; after -- every argument is a positional; - is a positional", async () => {
    const root = await missingRoot();
    expectOk(await cli(root, ["new", REF]));
    // `--json` here is --text's value, not the flag: the result is text, and the message says "--json".
    const appended = expectOk(await cli(root, ["append", REF, "--role", "user", "--text", "--json"]));
    expect(appended.stdout).not.toMatch(/^\{/);
    expect(json(expectOk(await cli(root, ["--json", "messages", REF]))).at(-1).parts).toMatchObject([{ type: "text", text: "--json" }]);
    expectOk(await cli(root, ["append", REF, "--role=assistant", "--text=-1 is odd"]));
    expect(json(expectOk(await cli(root, ["--json", "messages", REF]))).at(-1)).toMatchObject({
      role: "assistant",
      parts: [{ type: "text", text: "-1 is odd" }],
    });
    // After --, "--json" is the REF (an invalid one: exit 4), and no JSON is printed.
    const ended = await cli(root, ["show", "--", "--json"]);
    expect(ended.status).toBe(4);
    expect(ended.stderr).toMatch(/^error\[invalid-id\]: /);
    expect(ended.stdout).toBe("");
    const dash = await cli(root, ["show", "-"]);
    expect(dash.status).toBe(4);
    expect(dash.stderr).toMatch(/^error\[invalid-id\]: /);
    // Global options go anywhere before --, in both forms.
    expect(json(expectOk(await cli(root, ["show", REF, "--json"]))).meta.message_count).toBe(2);
    expect(json(expectOk(await cliRaw(["show", REF, `--root=${root}`, "--json"]))).meta.message_count).toBe(2);
    expect(json(expectOk(await cliRaw(["--json", "show", "--root", root, REF]))).meta.message_count).toBe(2);
  });

  it("--root without a value is bad usage", async () => {
    const result = await cliRaw(["--root"]);
    expect(result.status).toBe(2);
    expect(result.stderr).toBe("error[usage]: option --root needs a value DIR\n");
  });

  it("with --json an error is also one JSON document on stdout", async () => {
    const root = await missingRoot();
    const result = await cli(root, ["--json", "frobnicate"]);
    expect(result.status).toBe(2);
    expect(json(result)).toEqual({ error: { code: "usage", message: 'unknown command "frobnicate" (see sessionfold --help)', command: "frobnicate" } });
    expect(result.stderr).toBe('error[usage]: unknown command "frobnicate" (see sessionfold --help)\n');
  });
});

describe("invalid ids (exit 4) are refused before anything is created", () => {
  const hostile = ["../x/y", "a/b", "a/b/c/d", ".a/b/c", "a/../b", "a/b/", "/a/b/c", "a/b/c\\d", "a/b/.."];
  const commands = (ref: string): string[][] => [
    ["new", ref],
    ["append", ref, "--role", "user", "--text", "x"],
    ["show", ref],
    ["compose", ref],
    ["messages", ref],
    ["verify", ref],
    ["compact", ref],
    ["fork", ref, "--as", "s2"],
    ["archive", ref],
    ["unlock", ref, "--force"],
  ];

  it.each(hostile)("REF %j: every command exits 4 with error[invalid-id] and the root stays missing", async (ref) => {
    const root = await missingRoot();
    for (const argv of commands(ref)) {
      const result = await cli(root, ["--json", ...argv]);
      expect(result.status, argv.join(" ")).toBe(4);
      expect(result.stderr).toMatch(/^error\[invalid-id\]: invalid /);
      expect(json(result).error.code).toBe("invalid-id");
    }
    expect(await snapshot(root)).toBeNull();
  });

  it("hostile ids in an existing store change nothing either", async () => {
    const root = await missingRoot();
    await seed(root, REF, 2);
    const before = await snapshot(root);
    for (const ref of hostile) for (const argv of commands(ref)) expect((await cli(root, argv)).status).toBe(4);
    for (const argv of [["fork", REF, "--as", "../s2"], ["fork", REF, "--as", ".hidden"], ["ls", "--agent", ".."], ["ls", "--workspace", "a/b"]]) {
      const result = await cli(root, argv);
      expect(result.status).toBe(4);
      expect(result.stderr).toMatch(/^error\[invalid-id\]/);
    }
    expect(await snapshot(root)).toEqual(before);
  });
});

describe("not found, locks, corruption, schema, agent files", () => {
  it("a missing session is error[not-found], exit 4", async () => {
    const root = await missingRoot();
    for (
      const argv of [
        ["show", REF],
        ["compose", REF],
        ["messages", REF],
        ["verify", REF],
        ["append", REF, "--role", "user", "--text", "x"],
        ["compact", REF],
        ["fork", REF, "--as", "s2"],
        ["archive", REF],
        ["unlock", REF, "--force"],
      ]
    ) {
      const result = await cli(root, argv);
      expect(result.status, argv[0]).toBe(4);
      expect(result.stderr).toMatch(/^error\[not-found\]: no session a1\/w1\/s1/);
    }
    expect(await snapshot(root)).toBeNull();
    await seed(root, "a1/w1/other", 0);
    expect((await cli(root, ["show", REF])).stderr).toBe("error[not-found]: no session a1/w1/s1\n");
  });

  it("append against a locked session: exit 3, error[writer-locked] naming pid and host, nothing written", async () => {
    const root = await missingRoot();
    await seed(root, REF, 1);
    await writeFile(join(sessionDir(root, REF), "writer.lock"), lockContent(31337, "build-box"));
    const before = await snapshot(root);
    const result = await cli(root, ["--json", "append", REF, "--role", "user", "--text", "blocked"]);
    expect(result.status).toBe(3);
    expect(result.stderr).toMatch(ERROR_LINE);
    expect(result.stderr).toMatch(/^error\[writer-locked\]: .*pid 31337 on build-box \(node\) for "append"/);
    expect(json(result).error).toMatchObject({ code: "writer-locked", owner: { pid: 31337, hostname: "build-box" } });
    for (const argv of [["compact", REF], ["fork", REF, "--as", "s2"], ["archive", REF]]) expect((await cli(root, argv)).status, argv[0]).toBe(3);
    expect(await snapshot(root)).toEqual(before);
  });

  it("verify finds a corrupt middle line of an old segment with FILE:LINE and exits 1; show still exits 0", async () => {
    const root = await missingRoot();
    await seed(root, REF, 8);
    expectOk(await cli(root, ["compact", REF]));
    expectOk(await cli(root, ["compact", REF]));
    const segment = join(sessionDir(root, REF), "messages/segments/000000000001-000000000004.jsonl");
    const lines = (await readFile(segment, "utf8")).split("\n");
    lines[1] = '{"record_type":"message","sequence":2,';
    await writeFile(segment, lines.join("\n"));
    const text = await cli(root, ["verify"]);
    expect(text.status).toBe(1);
    expect(text.stdout).toContain("FAIL a1/w1/s1");
    expect(text.stdout).toContain("messages/segments/000000000001-000000000004.jsonl:2: invalid JSON");
    const report = json(await cli(root, ["--json", "verify", REF]));
    expect(report.sessions[0].ok).toBe(false);
    expect(report.sessions[0].diagnostics).toEqual([
      expect.objectContaining({ file: "messages/segments/000000000001-000000000004.jsonl", line: 2, code: "invalid_json", fatal: true }),
    ]);
    // Open reads only the newest segment's tail: show, compose and Active still work.
    expect((await cli(root, ["show", REF])).status).toBe(0);
    expect((await cli(root, ["compose", REF])).status).toBe(0);
    expect((await cli(root, ["messages", REF])).status).toBe(0);
    // Reading that segment is refused with its FILE:LINE.
    const page = await cli(root, ["messages", REF, "--before", "5"]);
    expect(page.status).toBe(4);
    expect(page.stderr).toMatch(/^error\[corrupt\]: a1\/w1\/s1: messages\/segments\/000000000001-000000000004\.jsonl:2: invalid JSON/);
  });

  it("verify checks footers and contiguity of every segment", async () => {
    const root = await missingRoot();
    await seed(root, REF, 8);
    expectOk(await cli(root, ["compact", REF]));
    expectOk(await cli(root, ["compact", REF]));
    const dir = join(sessionDir(root, REF), "messages/segments");
    const first = join(dir, "000000000001-000000000004.jsonl");
    const lines = (await readFile(first, "utf8")).trimEnd().split("\n");
    const footer = JSON.parse(lines.at(-1)!);
    await writeFile(first, [...lines.slice(0, -1), JSON.stringify({ ...footer, through_sequence: 3 })].join("\n") + "\n");
    let diagnostics = json(await cli(root, ["--json", "verify", REF])).sessions[0].diagnostics;
    expect(diagnostics).toEqual([
      expect.objectContaining({ file: "messages/segments/000000000001-000000000004.jsonl", line: 5, code: "invalid_segment", fatal: true }),
    ]);
    await writeFile(first, lines.slice(0, -1).join("\n") + "\n");
    diagnostics = json(await cli(root, ["--json", "verify", REF])).sessions[0].diagnostics;
    expect(diagnostics).toEqual([
      expect.objectContaining({
        line: 4,
        code: "invalid_segment",
        message: expect.stringContaining("the last line is not a summary footer through sequence 4"),
      }),
    ]);
    await writeFile(first, [lines[0], lines[2], lines[1], lines[3], lines[4]].join("\n") + "\n");
    diagnostics = json(await cli(root, ["--json", "verify", REF])).sessions[0].diagnostics;
    expect(diagnostics).toEqual([
      expect.objectContaining({ line: 2, code: "invalid_record", message: expect.stringContaining("message sequence 3 where 2 was expected") }),
    ]);
    expect((await cli(root, ["verify", REF])).status).toBe(1);
  });

  it("show words a footer, a meta.json field and an Active line that fail their schemas: file, line, field, what was expected", async () => {
    const root = await missingRoot();
    await seed(root, REF, 8);
    expectOk(await cli(root, ["compact", REF]));
    const dir = sessionDir(root, REF);
    const segment = join(dir, "messages/segments", (await readdir(join(dir, "messages/segments")))[0]!);
    const lines = (await readFile(segment, "utf8")).trimEnd().split("\n");
    await writeFile(segment, [...lines.slice(0, -1), JSON.stringify({ ...JSON.parse(lines.at(-1)!), through_sequence: "4" })].join("\n") + "\n");
    const meta = JSON.parse(await readFile(join(dir, "meta.json"), "utf8"));
    await writeFile(join(dir, "meta.json"), JSON.stringify({ ...meta, message_count: -1 }));
    const active = (await readFile(join(dir, "messages/active.jsonl"), "utf8")).trimEnd().split("\n");
    const first = JSON.parse(active[0]!);
    active[0] = JSON.stringify({ ...first, parts: [{ ...first.parts[0], text: 7 }] });
    await writeFile(join(dir, "messages/active.jsonl"), active.join("\n") + "\n");
    const shown = await cli(root, ["--json", "show", REF]);
    expect(shown.status).toBe(0);
    expect(json(shown).diagnostics).toEqual(expect.arrayContaining([
      expect.objectContaining({
        file: "meta.json",
        code: "invalid_record",
        message: expect.stringContaining("message_count: Too small: expected number to be >=0"),
      }),
      expect.objectContaining({
        file: expect.stringMatching(/^messages\/segments\/.*\.jsonl$/),
        code: "invalid_record",
        message: expect.stringContaining("invalid summary record: through_sequence: Invalid input: expected number, received string"),
      }),
      expect.objectContaining({
        file: "messages/active.jsonl",
        line: 1,
        code: "invalid_record",
        message: expect.stringContaining("invalid message record: parts.0.text: Invalid input: expected string, received number"),
      }),
    ]));
  });

  it("compose and messages exit 4 when a fatal diagnostic touches Active; show reports it and exits 0", async () => {
    const root = await missingRoot();
    await seed(root, REF, 3);
    const active = join(sessionDir(root, REF), "messages/active.jsonl");
    const lines = (await readFile(active, "utf8")).split("\n");
    lines[1] = "not json at all";
    await writeFile(active, lines.join("\n"));
    for (const command of ["compose", "messages"]) {
      const result = await cli(root, ["--json", command, REF]);
      expect(result.status, command).toBe(4);
      expect(result.stderr).toMatch(/^error\[corrupt\]: a1\/w1\/s1: messages\/active\.jsonl:2: invalid JSON/);
      expect(json(result).error).toMatchObject({ code: "corrupt", file: "messages/active.jsonl", line: 2 });
    }
    const shown = await cli(root, ["--json", "show", REF]);
    expect(shown.status).toBe(0);
    expect(json(shown).diagnostics[0]).toMatchObject({ file: "messages/active.jsonl", line: 2, code: "invalid_json", fatal: true });
    expect((await cli(root, ["verify", REF])).status).toBe(1);
    const append = await cli(root, ["append", REF, "--role", "user", "--text", "x"]);
    expect(append.status).toBe(4);
    expect(append.stderr).toMatch(/^error\[corrupt\]: .*messages\/active\.jsonl:2/);
  });

  it("compose exits 4 when the newest segment's footer is corrupt", async () => {
    const root = await missingRoot();
    await seed(root, REF, 4);
    expectOk(await cli(root, ["compact", REF]));
    const segment = join(sessionDir(root, REF), "messages/segments/000000000001-000000000002.jsonl");
    const lines = (await readFile(segment, "utf8")).trimEnd().split("\n");
    await writeFile(segment, [...lines.slice(0, -1), "{broken"].join("\n") + "\n");
    const result = await cli(root, ["compose", REF]);
    expect(result.status).toBe(4);
    expect(result.stderr).toMatch(/^error\[corrupt\]: a1\/w1\/s1: messages\/segments\/000000000001-000000000002\.jsonl/);
    expect((await cli(root, ["messages", REF])).status).toBe(0);
  });

  it("an unknown schema_version: show reports it (exit 0), verify exits 1, the others exit 4", async () => {
    const root = await missingRoot();
    await seed(root, REF, 2);
    const metaPath = join(sessionDir(root, REF), "meta.json");
    const meta = JSON.parse(await readFile(metaPath, "utf8"));
    await writeFile(metaPath, JSON.stringify({ ...meta, schema_version: 2 }));
    const shown = await cli(root, ["--json", "show", REF]);
    expect(shown.status).toBe(0);
    expect(json(shown)).toEqual({
      meta: { ...meta, schema_version: 2 },
      segments: [],
      active: { count: 0, first_sequence: null, last_sequence: null },
      draft: null,
      diagnostics: [expect.objectContaining({ file: "meta.json", line: null, code: "unsupported_schema", fatal: true })],
    });
    const verified = await cli(root, ["--json", "verify"]);
    expect(verified.status).toBe(1);
    expect(json(verified).sessions[0]).toMatchObject({ ref: REF, ok: false, diagnostics: [{ code: "unsupported_schema", fatal: true }] });
    for (const argv of [["compose", REF], ["messages", REF], ["append", REF, "--role", "user", "--text", "x"], ["compact", REF], ["fork", REF, "--as", "s2"]]) {
      const result = await cli(root, argv);
      expect(result.status, argv[0]).toBe(4);
      expect(result.stderr).toMatch(/^error\[unsupported-schema\]: a1\/w1\/s1: meta\.json: schema_version 2 is not supported/);
    }
    // meta.json was changed outside sessionfold: the catalog ls reads is rebuilt from it first
    // (docs/FORMAT.md "The catalog"); verify names the stale entry until then.
    expect((await cli(root, ["verify"])).stderr).toContain("note stale_catalog: a1/w1/s1: schema_version 1 where meta.json has 2");
    await cli(root, ["verify", "--repair-catalog"]);
    const listed = await cli(root, ["--json", "ls"]);
    expect(listed.status).toBe(0);
    expect(json(listed)).toEqual([]);
    expect(listed.stderr).toMatch(/^warning: a1\/w1\/s1: .*schema_version 2 is not supported/);
  });

  it("a meta.json that is not JSON: show exits 4 with error[corrupt]", async () => {
    const root = await missingRoot();
    await seed(root, REF, 1);
    await writeFile(join(sessionDir(root, REF), "meta.json"), "{ nope");
    const result = await cli(root, ["show", REF]);
    expect(result.status).toBe(4);
    expect(result.stderr).toMatch(/^error\[corrupt\]: a1\/w1\/s1: meta\.json: invalid JSON/);
    expect((await cli(root, ["verify", REF])).status).toBe(1);
  });

  it("agent.jsonc with a syntax error: exit 4, error[invalid-input] naming file:line:column", async () => {
    const root = await missingRoot();
    await seed(root, REF, 1);
    const file = join(root, "agents/a1/agent.jsonc");
    await put(file, '{\n  "instruction": "Be brief."\n  "context_window": 1000\n}\n');
    const before = await snapshot(root);
    for (const argv of [["compose", REF], ["append", REF, "--role", "user", "--text", "x"], ["compact", REF], ["new", "a1/w1/s9"]]) {
      const result = await cli(root, ["--json", ...argv]);
      expect(result.status, argv[0]).toBe(4);
      expect(result.stderr).toBe(`error[invalid-input]: ${file}:3:3: syntax error: comma expected\n`);
      expect(json(result).error).toMatchObject({ code: "invalid-input", file, line: 3, column: 3 });
    }
    expect(await snapshot(root)).toEqual(before);
    await writeFile(file, '{ "context_window": -5 }');
    const schema = await cli(root, ["compose", REF]);
    expect(schema.status).toBe(4);
    expect(schema.stderr).toMatch(
      new RegExp(`^error\\[invalid-input\\]: ${file.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}:1:21: context_window: expected a positive integer`),
    );
    // Commands that do not use the agent are unaffected.
    expect((await cli(root, ["show", REF])).status).toBe(0);
  });

  it("maps every error code to its exit status", () => {
    const expected: Record<ErrorCode, number> = {
      usage: 2,
      "writer-locked": 3,
      "revision-conflict": 3,
      busy: 5,
      closed: 5,
      "invalid-id": 4,
      "not-found": 4,
      "unsupported-schema": 4,
      corrupt: 4,
      "invalid-input": 4,
      "storage-full": 5,
      "compaction-failed": 5,
      "context-overflow": 5,
      cancelled: 5,
      internal: 5,
      unauthorized: 5,
      "sync-refused": 5,
      "key-required": 4,
      "wrong-key": 4,
    };
    for (const [code, status] of Object.entries(expected)) expect(exitStatusOf(code as ErrorCode), code).toBe(status);
  });

  it("compact refuses while a streaming draft exists (busy: not a lock, so exit 5)", async () => {
    const root = await missingRoot();
    await seed(root, REF, 2);
    const draft = {
      record_type: "message",
      sequence: 3,
      message_id: "m_d",
      role: "assistant",
      created_at: "2026-12-02T13:00:00.000Z",
      status: "streaming",
      parts: [],
    };
    await put(join(sessionDir(root, REF), "messages/assistant_message.json"), JSON.stringify(draft));
    const result = await cli(root, ["compact", REF]);
    expect(result.status).toBe(5);
    expect(result.stderr).toMatch(/^error\[busy\]: a1\/w1\/s1: a streaming draft exists/);
  });
});
