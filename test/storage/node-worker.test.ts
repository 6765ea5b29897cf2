import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import type { StoragePort } from "../../core/mod.ts";
import { runStorageTests } from "../../testing/storage-conformance.ts";
import { WorkerFileStorage } from "../../runtime-node/mod.ts";

// Starting a worker costs ~0.3 s, so the file shares two (a store and its second handle) and
// gives each test its own folder. Keys are prefixed as they are, never checked here: a
// hostile key stays hostile ("t1/../x", "t1/") and the worker itself must reject it.
const root = await mkdtemp(join(tmpdir(), "sessionfold-worker-"));
const first = new WorkerFileStorage({ root });
let second: WorkerFileStorage | undefined;
let count = 0;
afterAll(async () => {
  await Promise.all([first.close(), second?.close()]);
  await rm(root, { recursive: true, force: true });
});

function under(prefix: string, inner: StoragePort): StoragePort {
  const at = (path: string) => `${prefix}/${path}`;
  return {
    read: (path) => inner.read(at(path)),
    readTail: (path, maxBytes) => inner.readTail(at(path), maxBytes),
    list: (dir) => inner.list(dir === "" ? prefix : at(dir)),
    replace: (path, bytes) => inner.replace(at(path), bytes),
    append: (path, bytes) => inner.append(at(path), bytes),
    createExclusive: (path, bytes) => inner.createExclusive(at(path), bytes),
    truncate: (path, length) => inner.truncate(at(path), length),
    remove: (path) => inner.remove(at(path)),
    move: (from, to) => inner.move(at(from), at(to)),
    // One round trip through the worker, as an open makes it: paths prefixed on the way in, cut on the way out.
    readMany: async (requests) => {
      const found = await inner.readMany!(
        requests.map((r) =>
          "lastIn" in r
            ? { ...r, lastIn: r.lastIn === "" ? prefix : at(r.lastIn), ...(r.namedIn ? { namedIn: { ...r.namedIn, path: at(r.namedIn.path) } } : {}) }
            : { ...r, path: at(r.path) }
        ),
      );
      return found.map((result) => result && { ...result, path: result.path.slice(prefix.length + 1) });
    },
    // Commit plans and staged files run in the worker (its own applyCommitPlan), paths prefixed.
    applyCommitPlan: (plan) =>
      inner.applyCommitPlan!({
        ...plan,
        ...(plan.lock ? { lock: { ...plan.lock, path: at(plan.lock.path) } } : {}),
        ...(plan.expect ? { expect: { ...plan.expect, path: at(plan.expect.path) } } : {}),
        ...(plan.fence ? { fence: { ...plan.fence, path: at(plan.fence.path) } } : {}),
        ...(plan.release ? { release: { ...plan.release, path: at(plan.release.path) } } : {}),
        writes: plan.writes.map((write) => ({ ...write, path: at(write.path) })),
      }),
    stage: (path, bytes, id) => inner.stage!(at(path), bytes, id),
    unstage: (id) => inner.unstage!(id),
    close: async () => {},
  };
}

runStorageTests("NodeFileStorage via WorkerFileStorage", () => {
  const prefix = `t${++count}`;
  return {
    storage: under(prefix, first),
    reopen: async () => under(prefix, second ??= new WorkerFileStorage({ root })),
    teardown: () => first.remove(prefix),
  };
});
