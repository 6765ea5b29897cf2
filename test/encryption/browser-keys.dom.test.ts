/**
 * The browser's key store (runtime-browser/key-store.ts) on fake-indexeddb: a non-extractable
 * key kept in IndexedDB opens the store again; a passphrase-sealed one needs its passphrase
 * (none: key-required; another: wrong-key), and what IndexedDB holds then is no usable key.
 */
import { describe, expect, it } from "vitest";
import { EncryptedStorage, KeyRequiredError, MemoryStorage, Sessions, WrongKeyError } from "../../core/mod.ts";
import { openBrowserKeyring } from "../../runtime-browser/key-store.ts";

let next = 0;

describe("browser key store", () => {
  it("keeps a non-extractable key that opens the store again", async () => {
    const dbName = `keys-${next++}`;
    const raw = new MemoryStorage();
    const first = await openBrowserKeyring({ dbName });
    const sessions = new Sessions({ storage: await EncryptedStorage.create(raw, first) });
    const session = await sessions.create({ agentId: "a", workspaceId: "w", sessionId: "s" });
    await session.append({ role: "user", parts: [{ type: "text", text: "hello" }] });
    await session.close();
    const again = await openBrowserKeyring({ dbName });
    expect(again.currentKid).toBe(first.currentKid);
    const reopened = new Sessions({ storage: await EncryptedStorage.open(raw, again) });
    expect((await reopened.open("a/w/s")).active).toHaveLength(1);
  });

  it("a passphrase-sealed key needs its passphrase", async () => {
    const dbName = `keys-${next++}`;
    const raw = new MemoryStorage();
    const first = await openBrowserKeyring({ dbName, passphrase: "correct horse" });
    await EncryptedStorage.create(raw, first);
    await expect(openBrowserKeyring({ dbName })).rejects.toBeInstanceOf(KeyRequiredError);
    await expect(openBrowserKeyring({ dbName, passphrase: "wrong horse" })).rejects.toBeInstanceOf(WrongKeyError);
    const again = await openBrowserKeyring({ dbName, passphrase: "correct horse" });
    await expect(EncryptedStorage.open(raw, again)).resolves.toBeInstanceOf(EncryptedStorage);
  }, 60_000);
});
