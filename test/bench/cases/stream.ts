/**
 * Case 3: a streamed run with draft persistence against the same run without it.
 *
 * Each run is one `session.run()` of a `ScriptedProvider` reply streamed in many deltas,
 * committed through `openNodeSessions` (worker, fsync on), in a fresh session. "Without
 * drafts" is the same store wrapped so that writes and removals of
 * `messages/assistant_message.json` resolve at once without touching the disk: the run,
 * its lock, its commit and its events are identical, only draft persistence is gone.
 *
 * - paced: one delta per `setTimeout(1)` (≈1 ms; real providers stream 10–100× slower),
 *   the case the design speaks of: persistence must never pace the stream;
 * - unpaced: every delta at once (no timer between them), the worst case, where the
 *   run is so short that the final draft write and its removal are a visible share.
 *
 * Variants alternate run by run; the figure is the median time per run.
 *
 * @module
 */
import { join } from "node:path";
import type { FileTail, StoragePort } from "../../../core/mod.ts";
import { Sessions } from "../../../core/mod.ts";
import { openNodeSessions } from "../../../runtime-node/mod.ts";
import { ScriptedProvider } from "../../../testing/scripted-provider.ts";
import type { CaseContext } from "../lib/result.ts";
import { median } from "../lib/stats.ts";
import { syntheticText } from "../lib/synth.ts";

const DRAFT_SUFFIX = "/messages/assistant_message.json";

/** A storage that forgets the streaming draft: every other call goes to `inner` unchanged. */
export class DraftlessStorage implements StoragePort {
  draftWrites = 0;
  readonly inner: StoragePort;
  constructor(inner: StoragePort) {
    this.inner = inner;
  }
  read(path: string): Promise<Uint8Array | undefined> {
    return path.endsWith(DRAFT_SUFFIX) ? Promise.resolve(undefined) : this.inner.read(path);
  }
  readTail(path: string, maxBytes: number): Promise<FileTail | undefined> {
    return this.inner.readTail(path, maxBytes);
  }
  list(dir: string): Promise<string[]> {
    return this.inner.list(dir);
  }
  replace(path: string, bytes: Uint8Array): Promise<void> {
    if (path.endsWith(DRAFT_SUFFIX)) {
      this.draftWrites += 1;
      return Promise.resolve();
    }
    return this.inner.replace(path, bytes);
  }
  append(path: string, bytes: Uint8Array): Promise<void> {
    return this.inner.append(path, bytes);
  }
  createExclusive(path: string, bytes: Uint8Array): Promise<boolean> {
    return this.inner.createExclusive(path, bytes);
  }
  truncate(path: string, length: number): Promise<void> {
    return this.inner.truncate(path, length);
  }
  remove(path: string): Promise<void> {
    return path.endsWith(DRAFT_SUFFIX) ? Promise.resolve() : this.inner.remove(path);
  }
  move(from: string, to: string): Promise<boolean> {
    return this.inner.move(from, to);
  }
}

/** A storage that counts draft writes on the way through. */
class CountingStorage extends DraftlessStorage {
  override replace(path: string, bytes: Uint8Array): Promise<void> {
    if (path.endsWith(DRAFT_SUFFIX)) this.draftWrites += 1;
    return this.inner.replace(path, bytes);
  }
  override read(path: string): Promise<Uint8Array | undefined> {
    return this.inner.read(path);
  }
  override remove(path: string): Promise<void> {
    return this.inner.remove(path);
  }
}

export async function streamCase(ctx: CaseContext): Promise<void> {
  const store = await openNodeSessions({ root: join(ctx.tmp, "store") });
  const withDrafts = new CountingStorage(store.storage);
  const withoutDrafts = new DraftlessStorage(store.storage);
  const registries = { drafts: new Sessions({ storage: withDrafts }), none: new Sessions({ storage: withoutDrafts }) };
  let sessionNo = 0;

  /** One run in a fresh session; returns its wall time in ms. */
  const run = async (sessions: Sessions, deltas: number, delayMs: number): Promise<number> => {
    const session = await sessions.create({ agentId: "bench", workspaceId: "w1", sessionId: `s${sessionNo++}` });
    const provider = new ScriptedProvider([{ text: syntheticText(sessionNo, deltas * 8) }], { chunkSize: 8, delayMs });
    const t0 = performance.now();
    const handle = session.run("Explain the build failure.", { provider });
    for await (const _event of handle) {
      // a host would render the deltas here
    }
    await handle.result;
    return performance.now() - t0;
  };

  try {
    const modes = [
      { name: "paced", deltas: ctx.quick ? 200 : 500, delayMs: 1, reps: ctx.quick ? 5 : 9 },
      { name: "unpaced", deltas: ctx.quick ? 1000 : 2000, delayMs: 0, reps: ctx.quick ? 7 : 15 },
    ];
    for (const mode of modes) {
      await run(registries.drafts, 50, mode.delayMs); // warm-up
      await run(registries.none, 50, mode.delayMs);
      const times = { drafts: [] as number[], none: [] as number[] };
      const writesBefore = withDrafts.draftWrites;
      for (let rep = 0; rep < mode.reps; rep++) {
        times.drafts.push(await run(registries.drafts, mode.deltas, mode.delayMs));
        times.none.push(await run(registries.none, mode.deltas, mode.delayMs));
      }
      const value = median(times.drafts);
      const base = median(times.none);
      const writes = (withDrafts.draftWrites - writesBefore) / mode.reps;
      ctx.log(`case 3: ${mode.name}: with drafts ${value.toFixed(1)} ms, without ${base.toFixed(1)} ms, ${writes.toFixed(1)} draft writes per run`);
      ctx.emit({
        case: 3,
        name: `stream.drafts.${mode.name}(${mode.deltas} deltas)`,
        value,
        unit: "ms/run",
        baseline: base,
        baselineName: "the same run with draft writes discarded",
        ratio: value / base,
        ratioMeaning: "value / baseline",
        runs: mode.reps,
        ...(mode.name === "paced" ? { target: { op: "<=", limit: 1.05, text: "≤ 1.05 (≤ 5% overhead)" } as const } : {}),
        note: `${writes.toFixed(1)} draft writes per run (default draftFlush: 100 ms / 32 KiB)${
          mode.name === "unpaced" ? "; worst case, no target: every delta arrives at once" : ""
        }`,
      });
    }
  } finally {
    await store.close();
  }
}
