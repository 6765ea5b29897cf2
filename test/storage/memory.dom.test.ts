import { MemoryStorage } from "../../core/mod.ts";
import { runStorageTests } from "../../testing/storage-conformance.ts";

runStorageTests("MemoryStorage", () => {
  // One MemoryStorage is one store; a second handle onto it is the same object.
  const storage = new MemoryStorage();
  return { storage, reopen: async () => storage };
});
