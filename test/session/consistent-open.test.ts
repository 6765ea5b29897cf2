/**
 * An open reads `meta.json` before `active.jsonl` (docs/FORMAT.md, Revisions), so another
 * writer's commit that falls between the two reads cannot give the handle a revision newer
 * than the lines it holds. Found on PostgreSQL, where every read is a query with its own
 * snapshot: four processes committing to the same sessions stored one sequence twice.
 */
import { describe, expect, it } from "vitest";
import { MemoryStorage, RevisionConflictError, type Session, sessionPaths, Sessions, type StoragePort } from "../../core/mod.ts";

const REF = { agentId: "a1", workspaceId: "w1", sessionId: "s1" };
const PATHS = sessionPaths(REF);
const text = (t: string) => ({ role: "user" as const, parts: [{ type: "text" as const, text: t }] });

/**
 * A store whose reads may be served in any order, like queries on several connections: a
 * read of `meta.json` is served after a read of `active.jsonl` issued alongside it, and
 * `between` (another writer's commit) lands right after the first of the two is served.
 * Where the backend reads both in one step (`readMany`), it lands right after that step.
 */
class ReadsInAnyOrder extends MemoryStorage {
  between: (() => Promise<unknown>) | undefined;
  #activeRead: Promise<unknown> | undefined;
  readMany?: StoragePort["readMany"];

  constructor() {
    super();
    // A backend that reads an open's files in one step (readMany, one snapshot on PostgreSQL)
    // has no "between" its reads: there the commit lands right after the step.
    const inOneStep = (this as StoragePort).readMany?.bind(this);
    if (inOneStep) {
      this.readMany = async (requests) => {
        const found = await inOneStep(requests);
        if (!requests.some((request) => "path" in request && request.path === PATHS.meta)) return found;
        const between = this.between;
        this.between = undefined;
        await between?.();
        return found;
      };
    }
  }

  override async read(path: string): Promise<Uint8Array | undefined> {
    if (!this.between || (path !== PATHS.meta && path !== PATHS.active)) return super.read(path);
    if (path === PATHS.meta) {
      // Whatever the caller issued together with this read has been issued after one turn.
      await new Promise((resolve) => setImmediate(resolve));
      if (this.#activeRead) await this.#activeRead.catch(() => undefined);
      return this.#served(path);
    }
    const read = this.#served(path);
    this.#activeRead = read;
    return read;
  }

  async #served(path: string): Promise<Uint8Array | undefined> {
    const bytes = await super.read(path);
    const between = this.between;
    this.between = undefined;
    await between?.();
    return bytes;
  }
}

/** Appends like a host does: after a conflict, reload and try again. */
async function appendRetrying(session: Session, t: string): Promise<number> {
  for (;;) {
    try {
      return (await session.append(text(t))).sequences[0]!;
    } catch (error) {
      if (!(error instanceof RevisionConflictError)) throw error;
      await session.reload();
    }
  }
}

describe("an open with a commit between its reads", () => {
  it("never takes meta.json's new revision over the old lines: the next commit gets a free sequence", async () => {
    const storage = new ReadsInAnyOrder();
    const writerA = await new Sessions({ storage }).create(REF);
    await writerA.append([text("1"), text("2")]);
    storage.between = () => writerA.append(text("3 from A"));
    const writerB = await new Sessions({ storage }).open(REF);
    expect(storage.between).toBeUndefined(); // the commit did land between the reads
    expect(await appendRetrying(writerB, "4 from B")).toBe(4);

    const fresh = await new Sessions({ storage }).open(REF);
    expect(fresh.diagnostics).toEqual([]);
    expect(fresh.active.map((m) => [m.sequence, m.parts[0]!.type === "text" ? m.parts[0]!.text : ""])).toEqual([
      [1, "1"],
      [2, "2"],
      [3, "3 from A"],
      [4, "4 from B"],
    ]);
  });
});
