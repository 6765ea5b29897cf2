import { MemoryStorage } from "../../core/mod.ts";
import { test, expect } from "vitest";
test("smoke", async () => { const s = new MemoryStorage(); await s.append("a/b", new Uint8Array([1])); expect(await s.list("a")).toEqual(["b"]); });
