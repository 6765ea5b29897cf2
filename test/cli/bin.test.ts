/**
 * The real thing: `node bin/sessionfold.mjs …` in a child process (tsx registered by
 * bin/sessionfold.mjs, storage in its worker thread, fsync on), checking stdout JSON, the stderr line
 * and the exit status; and `npx sessionfold` from the repository root.
 */
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bin, json, lockContent, missingRoot, put, sessionDir, snapshot } from "./support.ts";

const SLOW = 120_000;
const REF = "a1/w1/s1";

describe("bin/sessionfold.mjs in a child process", () => {
  it(
    "--help exits 0; bad usage exits 2 with one error line",
    async () => {
      const help = await bin(["--help"]);
      expect(help.status).toBe(0);
      expect(help.stdout).toContain("Usage: sessionfold [--root DIR] [--json] COMMAND");
      expect(help.stderr).toBe("");
      const bad = await bin(["--json", "nope"]);
      expect(bad.status).toBe(2);
      expect(bad.stderr).toBe('error[usage]: unknown command "nope" (see sessionfold --help)\n');
      expect(json(bad).error.code).toBe("usage");
    },
    SLOW,
  );

  it(
    "new, append, compact, show and verify through the worker storage",
    async () => {
      const root = await missingRoot();
      const created = await bin(["--root", root, "--json", "new", REF, "--title", "Child"]);
      expect(created.stderr).toBe("");
      expect(created.status).toBe(0);
      expect(json(created)).toMatchObject({ session_id: "s1", title: "Child", revision: 0 });
      for (const [i, role] of ["user", "assistant", "user"].entries()) {
        const appended = await bin(["--root", root, "--json", "append", REF, "--role", role, "--text", `text ${i + 1}`]);
        expect(appended.status).toBe(0);
        expect(json(appended)).toEqual({ sequence: i + 1, revision: i + 1 });
      }
      const compacted = await bin(["--root", root, "--json", "compact", REF]);
      expect(compacted.status).toBe(0);
      expect(json(compacted)).toMatchObject({ revision: 4, removedMessages: 2, keptMessages: 1, segment: { start: 1, end: 2 } });
      const shown = await bin(["--root", root, "--json", "show", REF]);
      expect(shown.status).toBe(0);
      expect(json(shown)).toMatchObject({
        segments: [{ start: 1, end: 2 }],
        active: { count: 1, first_sequence: 3, last_sequence: 3 },
        draft: null,
        diagnostics: [],
      });
      const verified = await bin(["--root", root, "--json", "verify"]);
      expect(verified.status).toBe(0);
      expect(json(verified)).toEqual({ sessions: [{ ref: REF, ok: true, diagnostics: [] }] });
      // Node's modes: folders 0700, files 0600.
      const tree = (await snapshot(root))!;
      for (const [path, value] of Object.entries(tree)) expect(value.split(" ")[0], path).toBe(path.endsWith("/") ? "700" : "600");
    },
    SLOW,
  );

  it(
    "SESSIONFOLD_HOME is the default root",
    async () => {
      const root = await missingRoot();
      expect((await bin(["new", REF], { SESSIONFOLD_HOME: root })).status).toBe(0);
      const listed = await bin(["--json", "ls"], { SESSIONFOLD_HOME: root });
      expect(json(listed).map((m: { session_id: string }) => m.session_id)).toEqual(["s1"]);
    },
    SLOW,
  );

  it(
    "append against a locked session exits 3 naming the owner; unlock prints the owner and removes the lock",
    async () => {
      const root = await missingRoot();
      expect((await bin(["--root", root, "new", REF])).status).toBe(0);
      const lock = join(sessionDir(root, REF), "writer.lock");
      await writeFile(lock, lockContent(5150, "ci-runner"));
      const blocked = await bin(["--root", root, "--json", "append", REF, "--role", "user", "--text", "x"]);
      expect(blocked.status).toBe(3);
      expect(blocked.stderr).toMatch(/^error\[writer-locked\]: .*pid 5150 on ci-runner .*\n$/);
      expect(json(blocked).error).toMatchObject({ code: "writer-locked", owner: { pid: 5150, hostname: "ci-runner" } });
      const unlocked = await bin(["--root", root, "unlock", REF, "--force"]);
      expect(unlocked.status).toBe(0);
      expect(unlocked.stderr).toBe('writer.lock of a1/w1/s1: pid 5150 on ci-runner (node) for "append" since 2026-12-02T13:00:00.000Z\n');
      await expect(readFile(lock)).rejects.toThrow(/ENOENT/);
      expect((await bin(["--root", root, "append", REF, "--role", "user", "--text", "x"])).status).toBe(0);
    },
    SLOW,
  );

  it(
    "verify exits 1 naming FILE:LINE of a corrupt middle line; compose exits 4",
    async () => {
      const root = await missingRoot();
      expect((await bin(["--root", root, "new", REF])).status).toBe(0);
      const at = "2026-12-02T13:00:00.000Z";
      const records = [1, 2, 3].map((n) =>
        JSON.stringify({
          record_type: "message",
          sequence: n,
          message_id: `m${n}`,
          role: "user",
          created_at: at,
          parts: [{ sequence: 1, type: "text", text: `t${n}` }],
        })
      );
      records[1] = '{"record_type": "message", "sequence": 2, "role": "user"}';
      await put(join(sessionDir(root, REF), "messages/active.jsonl"), records.map((r) => `${r}\n`).join(""));
      const verified = await bin(["--root", root, "verify"]);
      expect(verified.status).toBe(1);
      expect(verified.stdout).toContain("messages/active.jsonl:2: invalid message record");
      const composed = await bin(["--root", root, "--json", "compose", REF]);
      expect(composed.status).toBe(4);
      expect(composed.stderr).toMatch(/^error\[corrupt\]: a1\/w1\/s1: messages\/active\.jsonl:2: /);
      expect(json(composed).error).toMatchObject({ code: "corrupt", file: "messages/active.jsonl", line: 2 });
    },
    SLOW,
  );

  it(
    "a hostile REF exits 4 with error[invalid-id] and creates no root",
    async () => {
      const root = await missingRoot();
      const result = await bin(["--root", root, "new", "../x/y"]);
      expect(result.status).toBe(4);
      expect(result.stderr).toMatch(/^error\[invalid-id\]: invalid agent_id "\.\."/);
      expect(await snapshot(root)).toBeNull();
    },
    SLOW,
  );

  it(
    "a large JSON document reaches a pipe whole before the process exits",
    async () => {
      const root = await missingRoot();
      expect((await bin(["--root", root, "new", REF])).status).toBe(0);
      const at = "2026-12-02T13:00:00.000Z";
      const text = "x".repeat(2000);
      const lines = Array.from(
        { length: 1500 },
        (_, i) =>
          JSON.stringify({
            record_type: "message",
            sequence: i + 1,
            message_id: `m${i + 1}`,
            role: "user",
            created_at: at,
            parts: [{ sequence: 1, type: "text", text }],
          }),
      );
      await put(join(sessionDir(root, REF), "messages/active.jsonl"), lines.map((l) => `${l}\n`).join(""));
      const result = await bin(["--root", root, "--json", "messages", REF]);
      expect(result.status).toBe(0);
      expect(result.stdout.length).toBeGreaterThan(3_000_000);
      expect(json(result)).toHaveLength(1500);
    },
    SLOW,
  );
});

describe("npx sessionfold", () => {
  it(
    "works from the repository root (npm exec runs the root package's own bin)",
    async () => {
      const result = await bin(["--help"], {}, ["npx", "--no-install", "sessionfold"]);
      expect(result.stderr).toBe("");
      expect(result.status).toBe(0);
      expect(result.stdout).toContain("Usage: sessionfold [--root DIR] [--json] COMMAND");
    },
    SLOW,
  );
});
