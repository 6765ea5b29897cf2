import { MemoryStorage } from "../../core/mod.ts";
import { runStorageTests } from "../../testing/mod.ts";

runStorageTests("MemoryStorage", () => ({ storage: new MemoryStorage() }));
