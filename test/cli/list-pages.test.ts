/**
 * `ls --limit N --cursor C` (pages by last activity) and `verify --repair-catalog` (the
 * catalog rebuilt from every meta.json), docs/CLI.md and docs/FORMAT.md "The catalog".
 */
import { appendFile, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bin, cli, expectOk, json, missingRoot, seed, sessionDir } from "./support.ts";

const catalogOf = (root: string) => readdir(join(root, "agents/a1/workspaces/w1/catalog")).catch(() => []);

describe("ls pages and the catalog", () => {
  it("--limit prints a page and names the next one's cursor; following cursors lists every session once", async () => {
    const root = await missingRoot();
    for (const id of ["s1", "s2", "s3", "s4", "s5"]) expectOk(await cli(root, ["new", `a1/w1/${id}`, "--title", id]));
    const first = json<{ sessions: { session_id: string }[]; cursor: string | null }>(expectOk(await cli(root, ["--json", "ls", "--limit", "2"])));
    expect(first.sessions).toHaveLength(2);
    expect(first.cursor).toEqual(expect.any(String));
    const seen = first.sessions.map((m) => m.session_id);
    let cursor = first.cursor;
    while (cursor) {
      const page = json<{ sessions: { session_id: string }[]; cursor: string | null }>(
        expectOk(await cli(root, ["--json", "ls", "--limit", "2", "--cursor", cursor])),
      );
      seen.push(...page.sessions.map((m) => m.session_id));
      cursor = page.cursor;
    }
    expect(seen).toEqual(json<{ session_id: string }[]>(await cli(root, ["--json", "ls"])).map((m) => m.session_id));
    expect([...seen].sort()).toEqual(["s1", "s2", "s3", "s4", "s5"]);
    const text = expectOk(await cli(root, ["ls", "--limit", "2"]));
    expect(text.stdout.split("\n").filter((l) => l.startsWith("a1/"))).toHaveLength(2);
    expect(text.stderr).toBe(`more: sessionfold ls --limit 2 --cursor ${first.cursor}\n`);
    expect((await cli(root, ["ls", "--limit", "0"])).status).toBe(2);
    expect((await cli(root, ["ls", "--limit", "x"])).status).toBe(2);
    expect((await cli(root, ["ls", "--cursor", "not-one"])).status).toBe(4);
  });

  it("a store without a catalog lists from meta.json; verify --repair-catalog rebuilds it, verify alone writes nothing", async () => {
    const root = await missingRoot();
    await seed(root, "a1/w1/s1", 2, "First");
    await seed(root, "a1/w1/s2", 1, "Second");
    // As a store written by a version before the catalog.
    await rm(join(root, "agents/a1/workspaces/w1/catalog"), { recursive: true });
    const before = json<{ session_id: string; title: string }[]>(expectOk(await cli(root, ["--json", "ls"])));
    expect(before.map((m) => m.title).sort()).toEqual(["First", "Second"]);
    const checked = expectOk(await cli(root, ["--json", "verify"]));
    expect(await catalogOf(root)).toEqual([]);
    expect(json(checked)).toMatchObject({
      catalog: { stale: [{ ref: "a1/w1/s1", archived: false, reason: "no entry" }, { ref: "a1/w1/s2", reason: "no entry" }] },
    });
    expect(checked.stderr).toContain("note stale_catalog: a1/w1/s1: no entry (sessionfold verify --repair-catalog rebuilds it)");
    const repaired = expectOk(await cli(root, ["--json", "verify", "--repair-catalog"]));
    expect(json(repaired)).toMatchObject({ catalog: { rebuilt: 2, stale: [] } });
    expect(repaired.stderr).toContain("catalog rebuilt from meta.json: 2 sessions");
    expect(await catalogOf(root)).toEqual(["sessions.jsonl"]);
    expect(json(expectOk(await cli(root, ["--json", "ls"])))).toEqual(before);
    // A stale line (a crash between meta.json and its line): named by verify, with what differs.
    const log = join(root, "agents/a1/workspaces/w1/catalog/sessions.log.jsonl");
    await appendFile(log, `${JSON.stringify({ name: "s1", meta: { ...before.find((m) => m.title === "First"), title: "Old" } })}\n`);
    expect(json(expectOk(await cli(root, ["--json", "verify"])))).toMatchObject({
      catalog: { stale: [{ ref: "a1/w1/s1", reason: 'title "Old" where meta.json has "First"' }] },
    });
  });

  it("verify REF names only REF's own stale catalog entry, not its workspace's others", async () => {
    const root = await missingRoot();
    await seed(root, "a1/w1/s1", 1, "First");
    await seed(root, "a1/w1/s2", 1, "Second");
    const listed = json<{ session_id: string; title: string }[]>(expectOk(await cli(root, ["--json", "ls"])));
    const log = join(root, "agents/a1/workspaces/w1/catalog/sessions.log.jsonl");
    await appendFile(log, `${JSON.stringify({ name: "s2", meta: { ...listed.find((m) => m.session_id === "s2"), title: "Old" } })}\n`);
    const other = expectOk(await cli(root, ["--json", "verify", "a1/w1/s1"]));
    expect(json(other)).toEqual({ sessions: [{ ref: "a1/w1/s1", ok: true, diagnostics: [] }] });
    expect(other.stderr).toBe("");
    const own = expectOk(await cli(root, ["--json", "verify", "a1/w1/s2"]));
    expect(json(own)).toMatchObject({ catalog: { stale: [{ ref: "a1/w1/s2", reason: 'title "Old" where meta.json has "Second"' }] } });
    expect(own.stderr).toContain("note stale_catalog: a1/w1/s2: ");
  });

  it("a session folder whose meta.json was deleted by hand (no messages): ls keeps the entry, verify names it, show and verify REF say so", async () => {
    const root = await missingRoot();
    expectOk(await cli(root, ["new", "a1/w1/gone", "--title", "Gone"]));
    await seed(root, "a1/w1/kept", 1, "Kept");
    expectOk(await cli(root, ["new", "a1/w1/removed", "--title", "Removed"]));
    await rm(join(sessionDir(root, "a1/w1/gone"), "meta.json"));
    // A folder removed whole keeps its line too, but a listing never shows an entry whose folder is gone.
    await rm(sessionDir(root, "a1/w1/removed"), { recursive: true });
    // docs/decisions.md: a listing reads the catalog, not a meta.json per session, so it still shows the entry.
    const listed = json<{ session_id: string }[]>(expectOk(await cli(root, ["--json", "ls"])));
    expect(listed.map((m) => m.session_id).sort()).toEqual(["gone", "kept"]);
    const reason = "an entry, but its folder holds no meta.json";
    // verify of the whole store names the stale entry (never fatal), in a real process too.
    const whole = expectOk(await bin(["--root", root, "--json", "verify"]));
    expect(json(whole)).toEqual({
      sessions: [{ ref: "a1/w1/kept", ok: true, diagnostics: [] }],
      catalog: { stale: [{ ref: "a1/w1/gone", archived: false, reason }] },
    });
    expect(whole.stderr).toBe(`note stale_catalog: a1/w1/gone: ${reason} (sessionfold verify --repair-catalog rebuilds it)\n`);
    // show and verify REF: no session, and the entry ls still shows is named with its remedy.
    const notFound = "error[not-found]: no session a1/w1/gone: its folder holds neither meta.json nor messages, " +
      "but the catalog ls reads still lists it (sessionfold verify --repair-catalog drops the entry)\n";
    for (const command of [["show", "a1/w1/gone"], ["verify", "a1/w1/gone"], ["messages", "a1/w1/gone"]]) {
      const result = await cli(root, command);
      expect(result.status, command.join(" ")).toBe(4);
      expect(result.stderr, command.join(" ")).toBe(notFound);
    }
    expect(json(await cli(root, ["--json", "show", "a1/w1/gone"])).error).toMatchObject({ code: "not-found", ref: "a1/w1/gone", stale_catalog: reason });
    // A session that never existed, or whose folder is gone (not listed), is not-found as before.
    expect((await cli(root, ["show", "a1/w1/never"])).stderr).toBe("error[not-found]: no session a1/w1/never\n");
    expect((await cli(root, ["show", "a1/w1/removed"])).stderr).toBe("error[not-found]: no session a1/w1/removed\n");
    // The rebuild drops the entry: ls, show and verify agree again.
    expectOk(await cli(root, ["verify", "--repair-catalog"]));
    expect(json<{ session_id: string }[]>(expectOk(await cli(root, ["--json", "ls"]))).map((m) => m.session_id)).toEqual(["kept"]);
    expect((await cli(root, ["show", "a1/w1/gone"])).stderr).toBe("error[not-found]: no session a1/w1/gone\n");
    expect(expectOk(await cli(root, ["verify"])).stderr).toBe("");
  });
});
