/**
 * The playground's encrypted store (docs/FORMAT.md "Encrypted stores", "Keys in a browser"):
 * the store opens in the clear, or encrypted with the browser keyring kept in the IndexedDB
 * database `<db>-keys`, unlocked by its passphrase when it has one. What the lock button
 * offers runs here: encrypting the store in place, setting, changing or removing the
 * passphrase, and sealing an export with an export passphrase.
 *
 * Encrypting the store and setting a first passphrase (a key rotation) change what every tab
 * must hold, so they run under the Web Lock `sessionfold-playground:<db>:keys`, tell the other
 * tabs to reload (a `BroadcastChannel`), and reload this one; changing or removing a
 * passphrase changes only how the keys are kept, and needs no reload.
 */
import { EncryptedStorage, InvalidInputError, isSealedExport, type KeyProvider, openSealedExport, sealExport, WrongKeyError } from "../core/mod.ts";
import {
  type BrowserSessions,
  changeBrowserKeyringPassphrase,
  describeBrowserKeyring,
  IndexedDbStorage,
  openBrowserKeyring,
  openBrowserSessions,
  rotateBrowserKeyring,
} from "../runtime-browser/mod.ts";
import type { PreparedDownload } from "./portable-io.ts";

/** What the lock button shows. */
export interface StoreLockState {
  readonly encrypted: boolean;
  /** The keyring is sealed by a passphrase (asked for at every start). */
  readonly passphrase: boolean;
  /** The key-encryption key in use. */
  readonly kid: string | undefined;
}

/**
 * Asks for the store's passphrase; `error` says why the last one did not unlock it. Resolves
 * with what was typed (the prompt cannot be dismissed: nothing opens without it).
 */
export type AskPassphrase = (error: string | undefined) => Promise<string>;

/** The IndexedDB database of the store `dbName`'s keys. */
function keysDb(dbName: string): string {
  return `${dbName}-keys`;
}

/** Runs `fn` holding the store's key lock, so no two tabs change or finish changing its keys at once. */
async function withKeyLock<T>(dbName: string, fn: () => Promise<T>): Promise<T> {
  const locks = typeof navigator !== "undefined" ? navigator.locks : undefined;
  if (!locks) return fn();
  return locks.request(`sessionfold-playground:${dbName}:keys`, fn);
}

/** The channel on which a tab that changed the store's keys tells the others to reload. */
function reloadChannel(dbName: string): BroadcastChannel | undefined {
  return typeof BroadcastChannel === "function" ? new BroadcastChannel(`sessionfold-playground:${dbName}:keys`) : undefined;
}

/** Reloads this tab when another tab encrypts the store or replaces its keys. */
export function followKeyChanges(dbName: string): void {
  const channel = reloadChannel(dbName);
  if (channel) channel.onmessage = () => location.reload();
}

/** Tells every other tab to reload, then reloads this one. */
function reloadEverywhere(dbName: string): void {
  const channel = reloadChannel(dbName);
  channel?.postMessage("keys-changed");
  channel?.close();
  location.reload();
}

/**
 * Opens the playground's store: in the clear when there is no keyring, else with the keyring's
 * keys (asking for the passphrase until one unlocks it). First it finishes what a closed tab
 * left half done (`EncryptedStorage.migrate` and `rotateBrowserKeyring` both resume), so a
 * passphrase once set never leaves an unsealed key behind.
 *
 * @throws {KeyRequiredError} when the store is encrypted and its keyring is gone.
 */
export async function openPlaygroundStore(dbName: string, ask: AskPassphrase): Promise<{ browser: BrowserSessions; lock: StoreLockState }> {
  const info = await describeBrowserKeyring({ dbName: keysDb(dbName) });
  if (!info) {
    const browser = await openBrowserSessions({ dbName });
    return { browser, lock: { encrypted: false, passphrase: false, kid: undefined } };
  }
  const { keys: unlocked, unlock } = await unlockKeyring(dbName, info.passphrase, ask);
  let keys = unlocked;
  const rotated = await withKeyLock(dbName, async () => {
    const backend = new IndexedDbStorage({ dbName });
    try {
      await EncryptedStorage.migrate(backend, keys);
      if ((await describeBrowserKeyring(unlock))!.kids.length === 1) return false;
      await rotateBrowserKeyring(backend, unlock);
      return true;
    } finally {
      await backend.close();
    }
  });
  if (rotated) keys = await openBrowserKeyring(unlock);
  const browser = await openBrowserSessions({ dbName, keys });
  return { browser, lock: { encrypted: true, passphrase: info.passphrase, kid: keys.currentKid } };
}

/** The keyring's keys, asking for its passphrase (again after a wrong one) when it has one. */
async function unlockKeyring(
  dbName: string,
  sealed: boolean,
  ask: AskPassphrase,
): Promise<{ keys: KeyProvider; unlock: { dbName: string; passphrase?: string } }> {
  let error: string | undefined;
  for (;;) {
    const unlock = { dbName: keysDb(dbName), ...(sealed ? { passphrase: await ask(error) } : {}) };
    try {
      return { keys: await openBrowserKeyring(unlock), unlock };
    } catch (caught) {
      if (!(caught instanceof WrongKeyError) || !sealed) throw caught;
      error = "That passphrase does not unlock this store. Nothing was changed; try again.";
    }
  }
}

/** Checks a new passphrase and its confirmation. */
function checkedPassphrase(passphrase: string, confirmation: string): string {
  if (passphrase.length < 8) throw new InvalidInputError("a passphrase needs at least 8 characters", { field: "passphrase" });
  if (passphrase !== confirmation) throw new InvalidInputError("the passphrase and its confirmation differ", { field: "confirmation" });
  return passphrase;
}

/**
 * Encrypts the store in place (every session, live and archived) with a new browser keyring,
 * sealed by `passphrase` when one is given, then reloads every tab of the playground.
 *
 * @throws {InvalidInputError} when the passphrase is too short or its confirmation differs, or a keyring already exists.
 */
export async function encryptStore(browser: BrowserSessions, passphrase: { value: string; confirmation: string } | undefined): Promise<void> {
  const chosen = passphrase ? checkedPassphrase(passphrase.value, passphrase.confirmation) : undefined;
  await withKeyLock(browser.dbName, async () => {
    if (await describeBrowserKeyring({ dbName: keysDb(browser.dbName) })) {
      throw new InvalidInputError("this store already has a keyring: reload the page to open it encrypted", { file: keysDb(browser.dbName) });
    }
    const keys = await openBrowserKeyring({ dbName: keysDb(browser.dbName), ...(chosen !== undefined ? { passphrase: chosen } : {}) });
    await EncryptedStorage.migrate(browser.storage, keys);
  });
  reloadEverywhere(browser.dbName);
}

/**
 * Sets, changes or removes the store's passphrase (`next` undefined removes it). A keyring
 * without a passphrase gets one by a key rotation, after which every tab reloads; a change or
 * removal re-seals the same keys in one IndexedDB transaction. A wrong `current` passphrase is
 * `wrong-key` and changes nothing.
 *
 * @returns the new lock state, or `"reloading"`.
 */
export async function changePassphrase(
  browser: BrowserSessions,
  lock: StoreLockState,
  current: string | undefined,
  next: { value: string; confirmation: string } | undefined,
): Promise<StoreLockState | "reloading"> {
  const chosen = next ? checkedPassphrase(next.value, next.confirmation) : undefined;
  const dbName = keysDb(browser.dbName);
  if (lock.passphrase) {
    await changeBrowserKeyringPassphrase({ dbName, ...(current !== undefined ? { passphrase: current } : {}), newPassphrase: chosen });
    return { ...lock, passphrase: chosen !== undefined };
  }
  if (chosen === undefined) return lock;
  await withKeyLock(browser.dbName, () => rotateBrowserKeyring(browser.storage, { dbName, newPassphrase: chosen }));
  reloadEverywhere(browser.dbName);
  return "reloading";
}

/** A prepared export sealed with an export passphrase (docs/FORMAT.md "Sealed exports"); its name says nothing of the session. */
export async function sealDownload(file: PreparedDownload, passphrase: { value: string; confirmation: string }): Promise<PreparedDownload> {
  const bytes = await sealExport(file.bytes, checkedPassphrase(passphrase.value, passphrase.confirmation));
  const stamp = new Date().toISOString().slice(0, 19).replace(/[:T]/g, "-");
  return { ...file, bytes, fileName: `sessionfold-export-${stamp}.sealed.json`, mediaType: "application/json" };
}

/**
 * The bytes of a file picked for import: a sealed export is opened with a passphrase `ask`
 * gets (asked again after a wrong one); `undefined` when the user gives up.
 */
export async function unsealedImport(
  name: string,
  bytes: Uint8Array,
  ask: (error: string | undefined) => Promise<string | undefined>,
): Promise<Uint8Array | undefined> {
  if (!isSealedExport(bytes)) return bytes;
  let error: string | undefined;
  for (;;) {
    const passphrase = await ask(error);
    if (passphrase === undefined) return undefined;
    try {
      return await openSealedExport(bytes, passphrase, name);
    } catch (caught) {
      if (!(caught instanceof WrongKeyError)) throw caught;
      error = "That passphrase does not open this file; try again.";
    }
  }
}
