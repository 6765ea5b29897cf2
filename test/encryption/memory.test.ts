/** The encrypted-store attack suite on the in-memory backend. */
import { MemoryStorage } from "../../core/mod.ts";
import { runEncryptionAttackTests } from "../../testing/encryption-attacks.ts";

runEncryptionAttackTests("MemoryStorage", async () => ({ storage: new MemoryStorage() }));
