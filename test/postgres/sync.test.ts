/**
 * The sync conformance suite on PostgreSQL: a memory device against a PostgreSQL store
 * reached directly, against one sync server over HTTP on it, and against two server
 * instances on the same schema that the client alternates between (the server keeps no
 * state beyond the store), both behind the suite's fault script and restartable on their ports.
 */
import { describe } from "vitest";
import { MemoryStorage } from "../../core/mod.ts";
import { createSyncHandler, directRemote, httpRemote, type SyncRemote } from "../../core/sync/mod.ts";
import { PostgresStorage } from "../../runtime-postgres/mod.ts";
import { runSyncTests, testPrincipal } from "../../testing/sync-conformance.ts";
import { SyncFaults } from "../../testing/sync-faults.ts";
import { restartableServer } from "../sync/loopback.ts";
import { recordCase } from "../sync/matrix.ts";
import { freshStorage, POSTGRES_URL } from "./support.ts";

function authorize(request: Request) {
  const match = /^Bearer (\w+)$/.exec(request.headers.get("authorization") ?? "");
  return match ? testPrincipal(match[1]!) : undefined;
}

/** Each call goes to the next remote in turn. */
function alternating(remotes: readonly SyncRemote[]): SyncRemote {
  let next = 0;
  const pick = () => remotes[next++ % remotes.length]!;
  return { id: remotes[0]!.id, push: (r) => pick().push(r), pull: (r) => pick().pull(r), read: (r) => pick().read(r), segment: (r) => pick().segment(r) };
}

describe.skipIf(!POSTGRES_URL)("PostgreSQL server", () => {
  runSyncTests(
    "memory ↔ PostgreSQL (direct)",
    () => {
      const { storage, teardown } = freshStorage();
      return {
        server: storage,
        newDevice: () => new MemoryStorage(),
        remote: (user) => directRemote(storage, { id: "pg", principal: testPrincipal(user ?? "nobody") }),
        teardown,
      };
    },
    { onCase: recordCase("memory↔PostgreSQL direct") },
  );

  runSyncTests(
    "memory ↔ two HTTP servers over one PostgreSQL schema, alternating",
    async () => {
      const { storage, schema, teardown } = freshStorage();
      const second = new PostgresStorage({ connectionString: POSTGRES_URL, schema });
      const faults = new SyncFaults();
      const servers = [
        await restartableServer(faults.wrap(createSyncHandler({ storage, authorize, basePath: "/sync" }))),
        await restartableServer(faults.wrap(createSyncHandler({ storage: second, authorize, basePath: "/sync" }))),
      ];
      return {
        server: storage,
        newDevice: () => new MemoryStorage(),
        remote: (user) =>
          alternating(servers.map((s) => httpRemote({ url: `${s.url}/sync`, id: "pg-http", headers: user ? { authorization: `Bearer ${user}` } : {} }))),
        unauthenticated: true,
        faults,
        restart: async () => {
          for (const s of servers) await s.restart();
        },
        teardown: async () => {
          for (const s of servers) await s.close();
          await second.close();
          await teardown();
        },
      };
    },
    { onCase: recordCase("memory↔2×HTTP(PostgreSQL)") },
  );
});
