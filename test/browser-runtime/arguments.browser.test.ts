/**
 * The browser runtime's entry points in real Chromium, called as plain JavaScript would: an argument of the wrong
 * kind is an `InvalidInputError` naming it before any database is opened, and a closed store refuses every call.
 */
import { afterEach, describe, expect, it } from "vitest";
import { InvalidInputError, StoreClosedError } from "../../core/mod.ts";
import {
  type BrowserKeyringOptions,
  type BrowserSessionsOptions,
  changeBrowserKeyringPassphrase,
  describeBrowserKeyring,
  openBrowserKeyring,
  openBrowserSessions,
  type PassphraseChangeOptions,
} from "../../runtime-browser/mod.ts";

const dbNames: string[] = [];
let next = 0;
function freshDb(): string {
  const name = `arguments-${Date.now()}-${next++}`;
  dbNames.push(name);
  return name;
}

afterEach(async () => {
  for (const name of dbNames.splice(0)) {
    await new Promise<void>((resolve) => {
      const request = indexedDB.deleteDatabase(name);
      request.onsuccess = request.onerror = request.onblocked = () => resolve();
    });
  }
});

/** What plain JavaScript may pass where TypeScript would not let it. */
const untyped = <T>(value: unknown) => value as T;

async function databaseNames(): Promise<string[]> {
  return (await indexedDB.databases()).map((database) => database.name ?? "");
}

describe("openBrowserSessions's options", () => {
  it("null, a number for dbName or a text for worker is an InvalidInputError naming it, and no database is opened", async () => {
    const name = `${Date.now()}`;
    const cases: [unknown, string][] = [
      [null, "openBrowserSessions(options)"],
      [{ dbName: Number(name) }, "openBrowserSessions(options).dbName"],
      [{ dbName: freshDb(), worker: "yes" }, "openBrowserSessions(options).worker"],
      [{ dbName: freshDb(), defaults: 5 }, "openBrowserSessions(options).defaults"],
    ];
    for (const [options, argument] of cases) {
      const error = await openBrowserSessions(untyped<BrowserSessionsOptions>(options)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidInputError);
      expect(error).toMatchObject({ code: "invalid-input", details: { argument } });
    }
    const names = await databaseNames();
    expect(names).not.toContain(name);
    for (const db of dbNames) expect(names).not.toContain(db);
  });
});

describe("a closed BrowserSessions", () => {
  it("heldBy rejects with StoreClosedError, as the registry's calls do", async () => {
    const browser = await openBrowserSessions({ dbName: freshDb() });
    const session = await browser.sessions.create({ agentId: "a", workspaceId: "w", sessionId: "s" });
    await session.append({ role: "user", parts: [{ type: "text", text: "hello" }] });
    await browser.close();
    await expect(browser.sessions.list()).rejects.toBeInstanceOf(StoreClosedError);
    const error = await browser.heldBy(session).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreClosedError);
    expect(error).toMatchObject({ code: "closed" });
  });
});

describe("the browser keyring's options", () => {
  it("null or a passphrase that is not text is an InvalidInputError naming it, and no key database is made", async () => {
    const keys = freshDb();
    const opened = await openBrowserKeyring(untyped<BrowserKeyringOptions>(null)).catch((e: unknown) => e);
    expect(opened).toBeInstanceOf(InvalidInputError);
    expect(opened).toMatchObject({ details: { argument: "openBrowserKeyring(options)" } });
    const sealed = await openBrowserKeyring(untyped<BrowserKeyringOptions>({ dbName: keys, passphrase: 5 })).catch((e: unknown) => e);
    expect(sealed).toBeInstanceOf(InvalidInputError);
    expect(sealed).toMatchObject({ details: { argument: "openBrowserKeyring(options).passphrase", found: "5" } });
    const described = await describeBrowserKeyring(untyped<{ dbName: string }>({ dbName: 7 })).catch((e: unknown) => e);
    expect(described).toMatchObject({ code: "invalid-input", details: { argument: "describeBrowserKeyring(options).dbName" } });
    expect(await databaseNames()).not.toContain(keys);

    await openBrowserKeyring({ dbName: keys, passphrase: "old words" });
    const changed = await changeBrowserKeyringPassphrase(untyped<PassphraseChangeOptions>({ dbName: keys, passphrase: "old words", newPassphrase: 42 }))
      .catch((e: unknown) => e);
    expect(changed).toMatchObject({ code: "invalid-input", details: { argument: "changeBrowserKeyringPassphrase(options).newPassphrase" } });
    await expect(openBrowserKeyring({ dbName: keys, passphrase: "old words" })).resolves.toBeDefined();
  });
});
