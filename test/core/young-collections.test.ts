/**
 * What an open leaves to V8's young collections: a session handle nobody holds any more is
 * freed by a scavenge, not promoted to the old generation and left to a full collection
 * (docs/decisions.md "The warm open's collections"). Measured in heap bytes after forced
 * collections, not in time.
 */
import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { expect, test } from "vitest";
import { MemoryStorage } from "../../core/mod.ts";
import { REF, registry } from "../support/session.ts";

setFlagsFromString("--expose-gc");
const collect = runInNewContext("gc") as (options?: { type: "minor" | "major" }) => void;

const oldSpaceBytes = (): number => getHeapSpaceStatistics().find((space) => space.space_name === "old_space")!.space_used_size;

test("a dropped handle's records are freed by young collections, not promoted", async () => {
  const sessions = registry(new MemoryStorage());
  const session = await sessions.create(REF, {});
  const text = "a line of the session's history ".repeat(30);
  await session.append(Array.from({ length: 100 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", parts: [{ type: "text", text }] } as const)));
  const open = async () => void (await sessions.open(REF)).compose({ provider: "openai", api: "responses", model: "gpt-5" });
  for (let i = 0; i < 5; i++) await open();
  collect();
  collect();
  const before = oldSpaceBytes();
  const opens = 40;
  for (let i = 0; i < opens; i++) {
    await open();
    if (i % 4 === 3) collect({ type: "minor" });
  }
  collect({ type: "minor" });
  collect({ type: "minor" });
  const promotedPerOpen = (oldSpaceBytes() - before) / opens;
  // While the view kept its commit path in a `WeakMap` entry whose value reached its key, every open's records came
  // through each scavenge: about 150 KB an open here, against about 2 KB of the engine's own bookkeeping now.
  expect(promotedPerOpen).toBeLessThan(8 * 1024);
});
