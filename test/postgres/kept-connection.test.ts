/**
 * The connection a `PostgresStorage` keeps between its commits (runtime-postgres/kept-connection.ts) never makes
 * anyone wait and never keeps a process alive: with a pool of one connection a read after a commit, and a second
 * commit during a first, get it without waiting for its idle timeout (timers are frozen here, so only the hand-back
 * can free it); a process whose handle committed and was never closed has no socket keeping it alive, and exits. (A kept connection the server ends is
 * dropped when its end is seen, as the pool drops an idle one: test/postgres/fencing.test.ts, "a lost connection".)
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it, vi } from "vitest";
import { Sessions } from "../../core/mod.ts";
import { PostgresStorage } from "../../runtime-postgres/mod.ts";
import { POSTGRES_URL, schemasDroppedAfterAll } from "./support.ts";

const REF = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
const text = (t: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text: t }] });
const newSchema = schemasDroppedAfterAll();

describe.skipIf(!POSTGRES_URL)("the connection kept for commits", () => {
  it("a handle of one connection: reads and a second commit get it without waiting for its idle timeout", async () => {
    const schema = newSchema("kept");
    const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema, maxConnections: 1 });
    try {
      const session = await new Sessions({ storage }).create({ ...REF, title: "one connection" });
      await session.append(text("one"));
      // Frozen from here: the kept connection's idle timeout never fires, so a statement that waited on it would hang.
      vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
      await session.append(text("two"));
      expect((await new Sessions({ storage }).open(REF)).active.map((m) => (m.parts[0] as { text: string }).text)).toEqual(["one", "two"]);
      const other = await new Sessions({ storage }).create({ ...REF, sessionId: "s2", title: "another" });
      await Promise.all([session.append(text("three")), other.append(text("elsewhere"))]);
      expect(await storage.read("agents/a1/workspaces/w1/sessions/s2/messages/active.jsonl")).toBeDefined();
      expect((await new Sessions({ storage }).open(REF)).active).toHaveLength(3);
    } finally {
      vi.useRealTimers();
      await storage.close();
    }
  });

  it("a process whose handle committed and was never closed exits", async () => {
    const schema = newSchema("kept");
    const script = `
      const before = process.getActiveResourcesInfo();
      const { Sessions } = await import(${JSON.stringify(fileURLToPath(new URL("../../core/mod.ts", import.meta.url)))});
      const { PostgresStorage } = await import(${JSON.stringify(fileURLToPath(new URL("../../runtime-postgres/mod.ts", import.meta.url)))});
      const storage = new PostgresStorage({ connectionString: ${JSON.stringify(POSTGRES_URL)}, schema: ${JSON.stringify(schema)} });
      const session = await new Sessions({ storage }).create({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
      await session.append({ role: "user", parts: [{ type: "text", text: "left open" }] });
      // What keeps the event loop alive now: no connection's socket (the idle hand-back would free it only a second later).
      console.log(JSON.stringify({ before, after: process.getActiveResourcesInfo() }));
    `;
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (out += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    const { before, after } = JSON.parse(out.trim()) as { before: string[]; after: string[] };
    const sockets = (resources: string[]) => resources.filter((resource) => /Pipe|TCP/.test(resource)).length;
    expect(sockets(after)).toBe(sockets(before));
    expect(code).toBe(0);
  });
});
