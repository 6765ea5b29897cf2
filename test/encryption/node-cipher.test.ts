/**
 * The Node runtime's AES-256-GCM (runtime-node/aes-gcm.ts) computes WebCrypto's function: a
 * store sealed with either opens with the other, byte for byte the same plaintext, and a
 * changed byte fails with both.
 */
import { describe, expect, it } from "vitest";
import { EncryptedStorage, importKeyEncryptionKey, keyring, MemoryStorage, Sessions, webCryptoAesGcm } from "../../core/mod.ts";
import { nodeAesGcm } from "../../runtime-node/mod.ts";

describe("nodeAesGcm", () => {
  it("seals what WebCrypto opens and opens what WebCrypto seals, and refuses a changed byte like it", async () => {
    const key = await crypto.subtle.importKey("raw", crypto.getRandomValues(new Uint8Array(32)), { name: "AES-GCM" }, false, ["encrypt", "decrypt"]);
    const nonce = crypto.getRandomValues(new Uint8Array(12));
    const ad = new TextEncoder().encode('["sessionfold-sealed",1]');
    for (const size of [0, 1, 15, 16, 17, 500, 4096]) {
      const plaintext = crypto.getRandomValues(new Uint8Array(size));
      const fromNode = await nodeAesGcm.encrypt(key, nonce, plaintext, ad);
      const fromWeb = await webCryptoAesGcm.encrypt(key, nonce, plaintext, ad);
      expect([...fromNode]).toEqual([...fromWeb]);
      expect([...(await webCryptoAesGcm.decrypt(key, nonce, new Uint8Array(fromNode), ad))]).toEqual([...plaintext]);
      expect([...(await nodeAesGcm.decrypt(key, nonce, new Uint8Array(fromWeb), ad))]).toEqual([...plaintext]);
      const changed = new Uint8Array(fromNode);
      changed[changed.length - 1] = changed[changed.length - 1]! ^ 1;
      await expect(Promise.resolve().then(() => nodeAesGcm.decrypt(key, nonce, changed, ad))).rejects.toThrow();
      await expect(webCryptoAesGcm.decrypt(key, nonce, changed, ad)).rejects.toThrow();
    }
    await expect(Promise.resolve().then(() => nodeAesGcm.decrypt(key, nonce, new Uint8Array(8), ad))).rejects.toThrow(RangeError);
  });

  it("a store written with one cipher reads the same with the other", async () => {
    const provider = keyring({ k1: await importKeyEncryptionKey(crypto.getRandomValues(new Uint8Array(32))) }, "k1");
    const inner = new MemoryStorage();
    const written = new Sessions({ storage: await EncryptedStorage.create(inner, provider, { cipher: nodeAesGcm }) });
    const s = await written.create({ agentId: "a1", workspaceId: "w1", sessionId: "s1", title: "node" });
    await s.append([{ role: "user", parts: [{ type: "text", text: "sealed by node:crypto" }] }]);
    const read = new Sessions({ storage: await EncryptedStorage.open(inner, provider) });
    const again = await read.open("a1/w1/s1");
    expect(again.diagnostics).toEqual([]);
    expect(again.active.map((m) => m.parts[0])).toMatchObject([{ type: "text", text: "sealed by node:crypto" }]);
    await again.append([{ role: "assistant", parts: [{ type: "text", text: "sealed by WebCrypto" }] }]);
    const back = await (new Sessions({ storage: await EncryptedStorage.open(inner, provider, { cipher: nodeAesGcm }) })).open("a1/w1/s1");
    expect(back.diagnostics).toEqual([]);
    expect(back.meta.title).toBe("node");
    expect(back.active).toHaveLength(2);
  });
});
