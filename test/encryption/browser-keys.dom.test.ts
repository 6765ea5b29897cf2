/**
 * The browser's key store (runtime-browser/key-store.ts, key-rotation.ts) on fake-indexeddb: a
 * non-extractable key kept in IndexedDB opens the store again; a passphrase-sealed one needs
 * its passphrase (none: key-required; another: wrong-key), and what IndexedDB holds then is no
 * usable key. Rotation re-wraps every session's data keys through the core's rotation and
 * drops the old key only then (a rotation cut short is finished by the next call); a
 * passphrase is changed or removed in one transaction, a wrong old one changing nothing.
 */
import { createStore, get } from "idb-keyval";
import { describe, expect, it } from "vitest";
import {
  EncryptedStorage,
  InvalidInputError,
  type KeyProvider,
  KeyRequiredError,
  MemoryStorage,
  RevisionConflictError,
  Sessions,
  type StoragePort,
  WrongKeyError,
} from "../../core/mod.ts";
import {
  changeBrowserKeyringPassphrase,
  describeBrowserKeyring,
  keyDatabase,
  openBrowserKeyring,
  readKeyring,
  replaceKeyring,
} from "../../runtime-browser/key-store.ts";
import { rotateBrowserKeyring } from "../../runtime-browser/key-rotation.ts";

let next = 0;
const SECRET = "the launch code is 0000";
const REF = "a/w/s";

/** An encrypted store in memory with one session holding {@linkcode SECRET}. */
async function storeWithSession(keys: KeyProvider): Promise<MemoryStorage> {
  const raw = new MemoryStorage();
  const sessions = new Sessions({ storage: await EncryptedStorage.create(raw, keys) });
  const session = await sessions.create({ agentId: "a", workspaceId: "w", sessionId: "s" });
  await session.append({ role: "user", parts: [{ type: "text", text: SECRET }] });
  await session.close();
  return raw;
}

/** The text of the session's first message, read through `keys`. */
async function firstText(raw: StoragePort, keys: KeyProvider): Promise<string> {
  const session = await new Sessions({ storage: await EncryptedStorage.open(raw, keys) }).open(REF);
  const part = session.active[0]?.parts[0];
  return part?.type === "text" ? part.text : "";
}

async function keysFile(raw: MemoryStorage): Promise<{ keys: { kid: string; retired?: boolean }[] }> {
  return JSON.parse(new TextDecoder().decode(await raw.read("agents/a/workspaces/w/sessions/s/keys.json")));
}

async function marker(raw: MemoryStorage): Promise<{ current_kid: string; kids: Record<string, unknown> }> {
  return JSON.parse(new TextDecoder().decode(await raw.read("encryption.json")));
}

/** `raw`, failing the first `replace` of a session's keys.json: a rotation cut short after the keyring got its new key. */
function failingFirstRewrap(raw: MemoryStorage): StoragePort {
  let failed = false;
  return new Proxy(raw, {
    get(target, name, receiver) {
      if (name === "replace") {
        return async (path: string, bytes: Uint8Array) => {
          if (!failed && path.endsWith("/keys.json")) {
            failed = true;
            throw new Error("the tab was closed");
          }
          return target.replace(path, bytes);
        };
      }
      const value = Reflect.get(target, name, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

describe("browser key store", () => {
  it("keeps a non-extractable key that opens the store again", async () => {
    const dbName = `keys-${next++}`;
    const first = await openBrowserKeyring({ dbName });
    const raw = await storeWithSession(first);
    const again = await openBrowserKeyring({ dbName });
    expect(again.currentKid).toBe(first.currentKid);
    expect(await firstText(raw, again)).toBe(SECRET);
    expect(await describeBrowserKeyring({ dbName })).toEqual({ passphrase: false, currentKid: first.currentKid, kids: [first.currentKid] });
    expect(await describeBrowserKeyring({ dbName: `keys-${next++}` })).toBeUndefined();
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

describe("browser keyring rotation", () => {
  it("makes a new kid current, re-wraps every data key through the core's rotation, then drops the old key", async () => {
    const dbName = `keys-${next++}`;
    const first = await openBrowserKeyring({ dbName });
    const raw = await storeWithSession(first);
    const report = await rotateBrowserKeyring(raw, { dbName });
    expect(report).toMatchObject({ sessions: 1, dataKeys: 1, previousKids: [first.currentKid], resumed: false, passphrase: false });
    expect(report.kid).not.toBe(first.currentKid);
    expect(await describeBrowserKeyring({ dbName })).toEqual({ passphrase: false, currentKid: report.kid, kids: [report.kid] });
    expect((await keysFile(raw)).keys).toEqual([expect.objectContaining({ kid: report.kid, retired: true })]);
    expect(await marker(raw)).toMatchObject({ current_kid: report.kid, kids: { [report.kid]: expect.anything() } });
    expect(Object.keys((await marker(raw)).kids)).toEqual([report.kid]);
    const after = await openBrowserKeyring({ dbName });
    expect(await firstText(raw, after)).toBe(SECRET);
    // The old key alone no longer opens the store.
    await expect(EncryptedStorage.open(raw, first)).rejects.toBeInstanceOf(WrongKeyError);
  });

  it("a rotation cut short keeps both keys, the store still opens, and the next call finishes it", async () => {
    const dbName = `keys-${next++}`;
    const first = await openBrowserKeyring({ dbName });
    const raw = await storeWithSession(first);
    await expect(rotateBrowserKeyring(failingFirstRewrap(raw), { dbName })).rejects.toThrow("the tab was closed");
    const midway = await describeBrowserKeyring({ dbName });
    expect(midway?.kids).toHaveLength(2);
    expect(midway?.kids).toContain(first.currentKid);
    expect((await marker(raw)).current_kid).toBe(first.currentKid);
    expect(await firstText(raw, await openBrowserKeyring({ dbName }))).toBe(SECRET);
    const report = await rotateBrowserKeyring(raw, { dbName });
    expect(report).toMatchObject({ kid: midway?.currentKid, resumed: true, previousKids: [first.currentKid], dataKeys: 1 });
    expect((await describeBrowserKeyring({ dbName }))?.kids).toEqual([midway?.currentKid]);
    expect(await firstText(raw, await openBrowserKeyring({ dbName }))).toBe(SECRET);
  });

  it("a rotation cut after the store moved to the new kid, before the keyring dropped the old one, is finished too", async () => {
    const dbName = `keys-${next++}`;
    const first = await openBrowserKeyring({ dbName });
    const raw = await storeWithSession(first);
    const store = keyDatabase(dbName);
    const before = (await readKeyring(store))!;
    const report = await rotateBrowserKeyring(raw, { dbName });
    // Put the old key back, as if the tab had closed just before the last transaction.
    const after = (await readKeyring(store))!;
    if (before.kind !== "plain" || after.kind !== "plain") throw new Error("expected keyrings without a passphrase");
    await replaceKeyring(store, after, { ...after, keys: { ...before.keys, ...after.keys } });
    expect((await describeBrowserKeyring({ dbName }))?.kids).toHaveLength(2);
    expect(await firstText(raw, await openBrowserKeyring({ dbName }))).toBe(SECRET);
    const resumed = await rotateBrowserKeyring(raw, { dbName });
    expect(resumed).toMatchObject({ kid: report.kid, resumed: true, previousKids: [first.currentKid] });
    expect((await describeBrowserKeyring({ dbName }))?.kids).toEqual([report.kid]);
    expect(await firstText(raw, await openBrowserKeyring({ dbName }))).toBe(SECRET);
  });

  it("rotates a passphrase-sealed keyring under the same passphrase", async () => {
    const dbName = `keys-${next++}`;
    const raw = await storeWithSession(await openBrowserKeyring({ dbName, passphrase: "correct horse" }));
    await expect(rotateBrowserKeyring(raw, { dbName })).rejects.toBeInstanceOf(KeyRequiredError);
    await expect(rotateBrowserKeyring(raw, { dbName, passphrase: "wrong horse" })).rejects.toBeInstanceOf(WrongKeyError);
    expect((await describeBrowserKeyring({ dbName }))?.kids).toHaveLength(1);
    const report = await rotateBrowserKeyring(raw, { dbName, passphrase: "correct horse" });
    expect(report.passphrase).toBe(true);
    expect(await firstText(raw, await openBrowserKeyring({ dbName, passphrase: "correct horse" }))).toBe(SECRET);
    await expect(openBrowserKeyring({ dbName })).rejects.toBeInstanceOf(KeyRequiredError);
  }, 60_000);

  it("gives a keyring without a passphrase one by rotating: its non-extractable keys are gone afterwards", async () => {
    const dbName = `keys-${next++}`;
    const raw = await storeWithSession(await openBrowserKeyring({ dbName }));
    await expect(changeBrowserKeyringPassphrase({ dbName, newPassphrase: "new words" })).rejects.toBeInstanceOf(InvalidInputError);
    // Cut short: the new key is sealed, the old plain one still kept for the data keys not yet re-wrapped.
    await expect(rotateBrowserKeyring(failingFirstRewrap(raw), { dbName, newPassphrase: "new words" })).rejects.toThrow("the tab was closed");
    expect(await describeBrowserKeyring({ dbName })).toMatchObject({ passphrase: true, kids: [expect.any(String), expect.any(String)] });
    await expect(openBrowserKeyring({ dbName })).rejects.toBeInstanceOf(KeyRequiredError);
    expect(await firstText(raw, await openBrowserKeyring({ dbName, passphrase: "new words" }))).toBe(SECRET);
    const report = await rotateBrowserKeyring(raw, { dbName, passphrase: "new words" });
    expect(report).toMatchObject({ resumed: true, passphrase: true });
    const stored = await get(
      "keyring",
      createStore(dbName, "keys"),
    ) as { kind: string; retiring?: unknown; sealed: Record<string, Uint8Array> };
    expect(stored.kind).toBe("passphrase");
    expect(stored.retiring).toBeUndefined();
    expect(Object.keys(stored.sealed)).toEqual([report.kid]);
    expect(await firstText(raw, await openBrowserKeyring({ dbName, passphrase: "new words" }))).toBe(SECRET);
    await expect(openBrowserKeyring({ dbName })).rejects.toBeInstanceOf(KeyRequiredError);
  }, 60_000);
});

describe("browser keyring passphrase", () => {
  it("changes the passphrase; a wrong old one is wrong-key and changes nothing", async () => {
    const dbName = `keys-${next++}`;
    const raw = await storeWithSession(await openBrowserKeyring({ dbName, passphrase: "old words" }));
    const before = await readKeyring(keyDatabase(dbName));
    await expect(changeBrowserKeyringPassphrase({ dbName, passphrase: "not it", newPassphrase: "new words" })).rejects.toBeInstanceOf(WrongKeyError);
    await expect(changeBrowserKeyringPassphrase({ dbName, newPassphrase: "new words" })).rejects.toBeInstanceOf(KeyRequiredError);
    await expect(changeBrowserKeyringPassphrase({ dbName, passphrase: "old words", newPassphrase: "" })).rejects.toBeInstanceOf(InvalidInputError);
    expect(await readKeyring(keyDatabase(dbName))).toEqual(before);
    await changeBrowserKeyringPassphrase({ dbName, passphrase: "old words", newPassphrase: "new words" });
    await expect(openBrowserKeyring({ dbName, passphrase: "old words" })).rejects.toBeInstanceOf(WrongKeyError);
    const reopened = await openBrowserKeyring({ dbName, passphrase: "new words" });
    expect(reopened.currentKid).toBe(before?.current);
    expect(await firstText(raw, reopened)).toBe(SECRET);
  }, 60_000);

  it("removes the passphrase: the same keys, stored non-extractable", async () => {
    const dbName = `keys-${next++}`;
    const raw = await storeWithSession(await openBrowserKeyring({ dbName, passphrase: "old words" }));
    await changeBrowserKeyringPassphrase({ dbName, passphrase: "old words" });
    expect((await describeBrowserKeyring({ dbName }))?.passphrase).toBe(false);
    expect(await firstText(raw, await openBrowserKeyring({ dbName }))).toBe(SECRET);
  }, 60_000);

  it("refuses a change made from a stale read of the keyring", async () => {
    const dbName = `keys-${next++}`;
    await openBrowserKeyring({ dbName, passphrase: "old words" });
    const store = keyDatabase(dbName);
    const stale = (await readKeyring(store))!;
    await changeBrowserKeyringPassphrase({ dbName, passphrase: "old words", newPassphrase: "new words" });
    const changed = await readKeyring(store);
    await expect(replaceKeyring(store, stale, stale)).rejects.toBeInstanceOf(RevisionConflictError);
    expect(await readKeyring(store)).toEqual(changed);
    await expect(openBrowserKeyring({ dbName, passphrase: "new words" })).resolves.toBeDefined();
  }, 60_000);
});
