/**
 * The runtimes' open functions from plain JavaScript (docs/decisions.md "Unknown option fields are refused"): a field
 * `openNodeSessions` or `new PostgresStorage` does not know, or one of `defaults` that session options lack, is an
 * `InvalidInputError` naming it, where it was given and the fields there are; nothing is opened, no folder made.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { invalidInput } from "../support/invalid-input.ts";
import { openNodeSessions } from "../../runtime-node/mod.ts";
import { PostgresStorage } from "../../runtime-postgres/mod.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("the runtimes' open functions refuse a field they do not know", () => {
  test("openNodeSessions, and its defaults", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sessionfold-options-"));
    dirs.push(dir);
    const root = join(dir, "store");
    const error = await invalidInput(() => openNodeSessions({ root, lazymeta: false } as never));
    expect(error.message).toBe(
      'openNodeSessions(options): unknown field "lazymeta"; the fields are root, worker, fsync, defaults, onStaleLockReclaimed, keys, onLeaseLost',
    );
    expect(error.details).toEqual({
      argument: "openNodeSessions(options)",
      field: "lazymeta",
      known: ["root", "worker", "fsync", "defaults", "onStaleLockReclaimed", "keys", "onLeaseLost"],
    });
    expect((await invalidInput(() => openNodeSessions({ root, worker: false, fsynk: false } as never))).message).toMatch(
      /^openNodeSessions\(options\): unknown field "fsynk" \(did you mean "fsync"\?\)/,
    );
    expect((await invalidInput(() => openNodeSessions({ root, worker: false, defaults: { maxstep: 3 } } as never))).message).toMatch(
      /^openNodeSessions\(options\)\.defaults: unknown field "maxstep" \(did you mean "maxSteps"\?\)/,
    );
    expect(existsSync(root)).toBe(false);
  });

  test("new PostgresStorage (before any connection)", async () => {
    const error = await invalidInput(() => new PostgresStorage({ connectionString: "postgres://nobody@127.0.0.1:1/none", maxConnection: 2 } as never));
    expect(error.message).toMatch(
      /^new PostgresStorage\(options\): unknown field "maxConnection" \(did you mean "maxConnections"\?\); the fields are connectionString,/,
    );
  });
});
