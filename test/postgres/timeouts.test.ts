/**
 * Nothing on PostgreSQL hangs (docs/POSTGRES.md "Timeouts"): a server that accepts
 * connections and never answers (a fake one on 127.0.0.1 and on a Unix socket) fails `ls`
 * and `show` within the URL's `connect_timeout`, and the API within the default connect
 * timeout; a statement that waits on the server past the statement timeout is a typed error
 * and the session takes writes afterwards. A bad `?schema=` or `connect_timeout=` in
 * `--store` is a usage error (exit 2), found before any connection.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Sessions, StorageError } from "../../core/mod.ts";
import { PostgresStorage } from "../../runtime-postgres/mod.ts";
import { cliRaw } from "../cli/support.ts";
import { POSTGRES_URL, schemasDroppedAfterAll } from "./support.ts";

/** A server that accepts every connection and never sends a byte. */
function silentServer(): { server: Server; listen: (at: number | string) => Promise<void>; close: () => Promise<void> } {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
  });
  return {
    server,
    listen: (at) => new Promise((resolve) => (typeof at === "number" ? server.listen(at, "127.0.0.1", resolve) : server.listen(at, resolve))),
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

let tcp: ReturnType<typeof silentServer>;
let unix: ReturnType<typeof silentServer>;
let socketDir: string;
let port: number;
const newSchema = schemasDroppedAfterAll();

beforeAll(async () => {
  tcp = silentServer();
  await tcp.listen(0);
  port = (tcp.server.address() as { port: number }).port;
  socketDir = await mkdtemp(join(tmpdir(), "sessionfold-silent-"));
  unix = silentServer();
  await unix.listen(join(socketDir, ".s.PGSQL.5432"));
});

afterAll(async () => {
  await tcp?.close();
  await unix?.close();
  if (socketDir) await rm(socketDir, { recursive: true, force: true });
});

describe("a server that accepts and never answers", () => {
  for (
    const [name, url] of [
      ["on 127.0.0.1", () => `postgres://app@127.0.0.1:${port}/app?connect_timeout=1`],
      ["on a Unix socket", () => `postgres://app@localhost/app?host=${encodeURIComponent(socketDir)}&connect_timeout=1`],
    ] as const
  ) {
    it(`${name}: ls and show fail within the URL's connect_timeout, typed`, async () => {
      for (const command of [["ls"], ["show", "a1/w1/s1"]]) {
        const result = await cliRaw(["--store", url(), ...command]);
        expect(result.status, result.stderr).toBe(5);
        expect(result.stderr).toMatch(/^error\[internal\]: PostgreSQL storage: .*timeout/);
      }
    }, 20_000);
  }

  it("the API gives up after the default connect timeout (10 s) with a StorageError", async () => {
    const storage = new PostgresStorage({ connectionString: `postgres://app@127.0.0.1:${port}/app` });
    try {
      const error = await storage.read("agents/a1/workspaces/w1/sessions/s1/meta.json").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StorageError);
      expect((error as StorageError).message).toMatch(/timeout/);
    } finally {
      await storage.close();
    }
  }, 30_000);
});

describe("--store URLs the backend refuses are usage errors", () => {
  it("a bad ?schema= or connect_timeout= exits 2 before connecting", async () => {
    for (const query of ["schema=no-such!", "schema=x%22y", "connect_timeout=soon"]) {
      const result = await cliRaw(["--store", `postgres://app@127.0.0.1:${port}/app?${query}`, "ls"]);
      expect(result.status, `${query}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toContain("--store");
    }
  });

  it("so is a bad connect_timeout= in a URL with an empty host (postgres://user@/db?host=…, as libpq reads it)", async () => {
    const result = await cliRaw(["--store", `postgres://app@/app?host=${encodeURIComponent(socketDir)}&connect_timeout=soon`, "ls"]);
    expect(result.status, result.stderr).toBe(2);
    expect(result.stderr).toContain('connect_timeout="soon"');
  });
});

describe.skipIf(!POSTGRES_URL)("a statement past the statement timeout", () => {
  it("is a typed error (57014), nothing is written, and the session takes writes afterwards", async () => {
    const schema = newSchema("timeout");
    // The schema (its tables and functions) and the session are made by a handle without the
    // timeout: DDL on a loaded server can take longer than the timeout, which only the blocked
    // statement is meant to reach.
    const setup = new PostgresStorage({ connectionString: POSTGRES_URL, schema });
    try {
      const created = await new Sessions({ storage: setup }).create({ agentId: "a1", workspaceId: "w1", sessionId: "s1", title: "timeout" });
      await created.append({ role: "user", parts: [{ type: "text", text: "before" }] });
    } finally {
      await setup.close();
    }
    const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema, statementTimeoutMillis: 1000 });
    const blocker = new pg.Client({ connectionString: POSTGRES_URL });
    await blocker.connect();
    try {
      const sessions = new Sessions({ storage });
      const session = await sessions.open({ agentId: "a1", workspaceId: "w1", sessionId: "s1" });
      await blocker.query("BEGIN");
      await blocker.query(`SELECT 1 FROM "${schema}".entries WHERE path = $1 FOR UPDATE`, ["agents/a1/workspaces/w1/sessions/s1/messages/active.jsonl"]);
      const error = await session.append({ role: "user", parts: [{ type: "text", text: "waits" }] }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StorageError);
      expect((error as StorageError).details.sqlstate).toBe("57014");
      await blocker.query("ROLLBACK");
      await session.append({ role: "user", parts: [{ type: "text", text: "after" }] });
      const reopened = await sessions.open(session.ref);
      expect(reopened.active.map((m) => (m.parts[0] as { text: string }).text)).toEqual(["before", "after"]);
    } finally {
      await blocker.end();
      await storage.close();
    }
  });
});

describe("a connection that cannot be had says why", () => {
  it("no server at the socket: the system's errno (ENOENT), not a SQLSTATE", async () => {
    const storage = new PostgresStorage({ connectionString: `postgres://app@/app?host=${encodeURIComponent(join(socketDir, "nothing-here"))}` });
    try {
      const error = await storage.read("agents/a1/workspaces/w1/sessions/s1/meta.json").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StorageError);
      expect((error as StorageError).details).toEqual({ errno: "ENOENT" });
      expect((error as StorageError).message).not.toContain("SQLSTATE");
    } finally {
      await storage.close();
    }
  });

  it.skipIf(!POSTGRES_URL)("every lock connection in use: the wait ends naming maxLockConnections, not the server", async () => {
    const schema = newSchema("lockpool");
    const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema, maxLockConnections: 1, connectTimeoutMillis: 500 });
    try {
      const sessions = new Sessions({ storage });
      for (const sessionId of ["s1", "s2"]) await sessions.create({ agentId: "a1", workspaceId: "w1", sessionId });
      // The one lock connection stays with this held session while the second hold waits for it.
      const held = await sessions.open({ agentId: "a1", workspaceId: "w1", sessionId: "s1" }, { hold: true });
      const error = await sessions.open({ agentId: "a1", workspaceId: "w1", sessionId: "s2" }, { hold: true }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StorageError);
      expect((error as StorageError).message).toContain("all 1 of this handle's connections were in use (maxLockConnections");
      await held.close();
    } finally {
      await storage.close();
    }
  });
});
