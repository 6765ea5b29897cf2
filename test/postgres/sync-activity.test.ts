/**
 * A migration into PostgreSQL is not activity (docs/SYNC.md "Activity"): a folder store whose
 * clock is in 2020 synced into a PostgreSQL store whose server's clock is in 2030 lists its
 * sessions there with the source's `updated_at`, in the source's order (the catalog's index by
 * activity), a session sent in parts and one appended to after it came back online included.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Sessions } from "../../core/mod.ts";
import { directRemote, SyncServer, syncStores } from "../../core/sync/mod.ts";
import { NodeFileStorage } from "../../runtime-node/mod.ts";
import { appendLater, listing, PARTS, sourceClock, steppingClock, writeSource } from "../sync/activity-source.ts";
import { freshStorage, POSTGRES_URL } from "./support.ts";

describe.skipIf(!POSTGRES_URL)("a sync into PostgreSQL keeps each session's updated_at", () => {
  it("folder store to PostgreSQL: whole, in parts and appended, listed in the source's order with its times", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sessionfold-activity-"));
    const { storage, teardown } = freshStorage();
    try {
      const { clock, tick } = sourceClock();
      const source = new Sessions({ storage: new NodeFileStorage({ root: dir }), clock });
      const server = new SyncServer({ storage, clock: steppingClock("2030-01-01T00:00:00.000Z") });
      const onServer = new Sessions({ storage });
      await writeSource(source, tick);
      expect((await syncStores({ local: source, remote: directRemote(server), ...PARTS })).conflicts).toEqual([]);
      expect(await listing(onServer)).toEqual(await listing(source));
      await appendLater(source, tick);
      expect((await syncStores({ local: source, remote: directRemote(server), ...PARTS })).conflicts).toEqual([]);
      const after = await listing(source);
      expect(after[0]![0]).toBe("a1/w1/small");
      expect(await listing(onServer)).toEqual(after);
    } finally {
      await teardown();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
