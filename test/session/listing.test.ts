/**
 * `Sessions.list` pages (docs/FORMAT.md "The catalog"): newest activity first, a cursor per
 * page, stable under commits made between pages; on every backend kind that has a catalog
 * (memory, files) and on one that has none (a storage without `readCatalog`).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { InvalidInputError, MemoryStorage, type SessionMeta, type Sessions, type StoragePort } from "../../core/mod.ts";
import { NodeFileStorage } from "../../runtime-node/mod.ts";
import { registry } from "../support/session.ts";
import { user } from "./support.ts";
import { withoutCatalog } from "../support/without-catalog.ts";

const folders: string[] = [];
afterEach(async () => {
  for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
});

const backends: [string, () => Promise<StoragePort>][] = [
  ["memory", () => Promise.resolve(new MemoryStorage())],
  ["files", async () => {
    const root = await mkdtemp(join(tmpdir(), "sessionfold-listing-"));
    folders.push(root);
    return new NodeFileStorage({ root, fsync: false });
  }],
  ["no catalog", () => Promise.resolve(withoutCatalog(new MemoryStorage()))],
];

/** Every page of a listing, following cursors; `between` runs after each page. */
async function allPages(sessions: Sessions, limit: number, between: (page: number) => Promise<void> = async () => {}): Promise<SessionMeta[][]> {
  const pages: SessionMeta[][] = [];
  let cursor: string | undefined;
  do {
    const page = await sessions.list({ agentId: "a1", limit, ...(cursor ? { cursor } : {}) });
    pages.push([...page]);
    cursor = page.cursor;
    await between(pages.length);
  } while (cursor);
  return pages;
}

describe.each(backends)("Sessions.list pages (%s)", (_name, open) => {
  test("newest activity first, then by ref; each page's cursor lists the next; the last page has none", async () => {
    const sessions = registry(await open());
    for (const id of ["s1", "s2", "s3", "s4", "s5", "s6", "s7"]) await sessions.create({ agentId: "a1", workspaceId: id < "s4" ? "w1" : "w2", sessionId: id });
    const s2 = await sessions.open("a1/w1/s2");
    await s2.append(user("bump")); // s2 becomes the newest
    const all = await sessions.list({ agentId: "a1" });
    expect(all.map((m) => m.session_id)).toEqual(["s2", "s7", "s6", "s5", "s4", "s3", "s1"]);
    expect(all.cursor).toBeUndefined();
    const pages = await allPages(sessions, 3);
    expect(pages.map((page) => page.map((m) => m.session_id))).toEqual([["s2", "s7", "s6"], ["s5", "s4", "s3"], ["s1"]]);
    expect((await sessions.list({ agentId: "a1", limit: 7 })).cursor).toBeUndefined();
  });

  test("stable under commits between pages: an unchanged session exactly once, a changed one at most once", async () => {
    const sessions = registry(await open());
    const ids = Array.from({ length: 9 }, (_, i) => `s${i + 1}`);
    for (const id of ids) await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId: id });
    // Listed newest first: s9 … s1. After page 1, s2 (on a later page) and s8 (on page 1) commit.
    const pages = await allPages(sessions, 3, async (page) => {
      if (page !== 1) return;
      await (await sessions.open("a1/w1/s2")).append(user("moved up"));
      await (await sessions.open("a1/w1/s8")).append(user("moved up too"));
    });
    const seen = pages.flat().map((m) => m.session_id);
    expect(new Set(seen).size).toBe(seen.length); // at most once
    for (const id of ids.filter((id) => id !== "s2" && id !== "s8")) expect(seen).toContain(id); // unchanged: exactly once
    // A fresh listing has the two on top.
    expect((await sessions.list({ agentId: "a1", limit: 2 })).map((m) => m.session_id)).toEqual(["s8", "s2"]);
  });

  test("as recent as each other: by ref across workspaces (`w1/` before `w1x/`, `w1x/` before `w2/`), whole or a page at a time", async () => {
    // One instant for every session: only the ref orders them.
    const sessions = registry(await open(), undefined, () => Date.parse("2026-12-02T13:00:00.000Z"));
    const refs = ["a1/w2/s1", "a1/w1x/s0", "a1/w1/s9", "a1/w1/s10", "a1/w1x/s2", "a1/w2/s0"];
    for (const ref of refs) {
      const [agentId, workspaceId, sessionId] = ref.split("/") as [string, string, string];
      await sessions.create({ agentId, workspaceId, sessionId });
    }
    const byRef = [...refs].sort(); // code units: "a1/w1/s10" < "a1/w1/s9" < "a1/w1x/…" < "a1/w2/…"
    const refOf = (m: SessionMeta) => `${m.agent_id}/${m.workspace_id}/${m.session_id}`;
    expect((await sessions.list({ agentId: "a1" })).map(refOf)).toEqual(byRef);
    for (const limit of [1, 2, 4]) expect((await allPages(sessions, limit)).flat().map(refOf)).toEqual(byRef);
  });

  test("a limit that is not a positive integer and a cursor no listing gave are refused", async () => {
    const sessions = registry(await open());
    for (const limit of [0, -1, 1.5, Number.NaN]) await expect(sessions.list({ limit })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(sessions.list({ cursor: "not a cursor" })).rejects.toMatchObject({ code: "invalid-input" });
  });
});
