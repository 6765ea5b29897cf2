/**
 * End-to-end encrypted sessions through sync on PostgreSQL (docs/SYNC.md "End-to-end
 * encrypted sessions"): the conformance suite with encrypted devices against a PostgreSQL
 * store reached directly and through a real HTTP server on loopback, and the end-to-end
 * checks with the no-plaintext check over every row of the server's schema.
 */
import { describe } from "vitest";
import { createSyncHandler, directRemote, httpRemote } from "../../core/sync/mod.ts";
import { serveFetchHandler } from "../../runtime-node/mod.ts";
import { runSyncTests, testPrincipal } from "../../testing/sync-conformance.ts";
import { encryptedTarget, runEndToEndChecks } from "../sync/encrypted-pair.ts";
import { everyRow, freshStorage, POSTGRES_URL } from "./support.ts";

function authorize(request: Request) {
  const match = /^Bearer (\w+)$/.exec(request.headers.get("authorization") ?? "");
  return match ? testPrincipal(match[1]!) : undefined;
}

describe.skipIf(!POSTGRES_URL)("PostgreSQL server, encrypted devices", () => {
  runSyncTests(
    "encrypted memory ↔ PostgreSQL (direct)",
    () => {
      const { storage, teardown } = freshStorage();
      return encryptedTarget(storage, (user) => directRemote(storage, { id: "pg", principal: testPrincipal(user ?? "nobody") }), { teardown });
    },
    { encrypted: true },
  );

  runSyncTests(
    "encrypted memory ↔ HTTP server over PostgreSQL",
    async () => {
      const { storage, teardown } = freshStorage();
      const loopback = await serveFetchHandler(createSyncHandler({ storage, authorize, basePath: "/sync" }));
      return encryptedTarget(
        storage,
        (user) => httpRemote({ url: `${loopback.url}/sync`, id: "pg-http", headers: user ? { authorization: `Bearer ${user}` } : {} }),
        {
          unauthenticated: true,
          teardown: async () => {
            await loopback.close();
            await teardown();
          },
        },
      );
    },
    { encrypted: true },
  );

  runEndToEndChecks("HTTP server on loopback over PostgreSQL", async () => {
    const { storage, schema, teardown } = freshStorage();
    const loopback = await serveFetchHandler(createSyncHandler({ storage, authorize, basePath: "/sync" }));
    return {
      server: storage,
      remote: (user) => httpRemote({ url: `${loopback.url}/sync`, id: "pg-http", headers: { authorization: `Bearer ${user}` } }),
      dump: () => everyRow(schema),
      teardown: async () => {
        await loopback.close();
        await teardown();
      },
    };
  });
});
