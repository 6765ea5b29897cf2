/**
 * CORS of the sync handler (docs/SYNC.md "A server on another origin"), on a real server on
 * loopback: a listed origin's preflight is answered before `authorize`, and every answer to it
 * (a refusal included) names that origin, never `*`; an origin not listed, and any origin when
 * none is listed, gets no CORS header; a request without `Origin` is served as before. Then
 * real Chromium pages on two other origins: the listed one syncs with a bearer token, the
 * other's browser blocks the answer.
 */
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidInputError } from "../../core/errors.ts";
import { MemoryStorage } from "../../core/mod.ts";
import { createSyncHandler, STORE_OWNER, SYNC_PROTOCOL_VERSION } from "../../core/sync/mod.ts";
import { type FetchServer, serveFetchHandler } from "../../runtime-node/mod.ts";
import { CHROMIUM_ARGS, CHROMIUM_PATH } from "../support/chromium.ts";

const APP = "http://localhost:5173";
const TOKEN = "Bearer t0ken";
const PULL = JSON.stringify({ v: SYNC_PROTOCOL_VERSION });

/** A sync server on loopback at `/sync` that lets `origins` in, counting the requests `authorize` saw. */
async function syncServer(corsOrigins?: readonly string[]): Promise<{ server: FetchServer; authorized: { count: number } }> {
  const authorized = { count: 0 };
  const handler = createSyncHandler({
    storage: new MemoryStorage(),
    basePath: "/sync",
    maxBodyBytes: 1024,
    authorize: (request) => (authorized.count++, request.headers.get("authorization") === TOKEN ? STORE_OWNER : undefined),
    ...(corsOrigins ? { corsOrigins } : {}),
  });
  return { server: await serveFetchHandler(handler), authorized };
}

function preflight(url: string, origin: string): Promise<Response> {
  return fetch(url, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "authorization,content-type" },
  });
}

/** The CORS headers of an answer, its body read so the connection is free. */
async function corsOf(response: Response): Promise<Record<string, string | null>> {
  await response.arrayBuffer();
  const names = ["access-control-allow-origin", "access-control-allow-credentials", "access-control-allow-methods", "access-control-allow-headers", "vary"];
  return Object.fromEntries(names.map((name) => [name, response.headers.get(name)]));
}

describe("createSyncHandler's corsOrigins", () => {
  let listed: { server: FetchServer; authorized: { count: number } };
  let unlisted: { server: FetchServer; authorized: { count: number } };
  beforeAll(async () => {
    listed = await syncServer([`${APP}/`, "HTTPS://App.example:443"]);
    unlisted = await syncServer();
  });
  afterAll(async () => {
    await listed.server.close();
    await unlisted.server.close();
  });

  it("answers a listed origin's preflight before authorize: the origin, POST, Authorization and Content-Type", async () => {
    const before = listed.authorized.count;
    const answer = await preflight(`${listed.server.url}/sync/pull`, APP);
    expect(answer.status).toBe(204);
    expect(await corsOf(answer)).toEqual({
      "access-control-allow-origin": APP,
      "access-control-allow-credentials": "true",
      "access-control-allow-methods": "POST",
      "access-control-allow-headers": "authorization, content-type",
      vary: "Origin",
    });
    expect(listed.authorized.count).toBe(before);
  });

  it("names a listed origin on every answer to it, refusals included, never *", async () => {
    const headers = { origin: "https://app.example", "content-type": "application/json" };
    const named = { "access-control-allow-origin": "https://app.example", "access-control-allow-credentials": "true", vary: "Origin" };
    const served = await fetch(`${listed.server.url}/sync/pull`, { method: "POST", headers: { ...headers, authorization: TOKEN }, body: PULL });
    expect(served.status).toBe(200);
    expect(await corsOf(served)).toMatchObject(named);
    const answers = [
      await fetch(`${listed.server.url}/sync/pull`, { method: "POST", headers, body: PULL }),
      await fetch(`${listed.server.url}/sync/nowhere`, { method: "POST", headers: { ...headers, authorization: TOKEN }, body: PULL }),
      await fetch(`${listed.server.url}/sync/push`, { method: "POST", headers: { ...headers, authorization: TOKEN }, body: "x".repeat(2048) }),
      await fetch(`${listed.server.url}/sync/pull`, { method: "POST", headers: { ...headers, authorization: TOKEN }, body: "{" }),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([401, 404, 413, 400]);
    for (const answer of answers) expect(await corsOf(answer)).toMatchObject(named);
  });

  it("gives an origin not listed no CORS header, its preflight included; a request without Origin is served as before", async () => {
    const before = listed.authorized.count;
    const refused = await preflight(`${listed.server.url}/sync/pull`, "http://evil.example");
    expect(refused.status).toBe(405);
    expect(await corsOf(refused)).toMatchObject({ "access-control-allow-origin": null, "access-control-allow-methods": null, vary: "Origin" });
    // A page of another port of a listed host is another origin.
    const served = await fetch(`${listed.server.url}/sync/pull`, {
      method: "POST",
      headers: { origin: "http://localhost:5174", authorization: TOKEN, "content-type": "application/json" },
      body: PULL,
    });
    expect(served.status).toBe(200);
    expect(await corsOf(served)).toMatchObject({ "access-control-allow-origin": null, "access-control-allow-credentials": null });
    const direct = await fetch(`${listed.server.url}/sync/pull`, { method: "POST", headers: { authorization: TOKEN }, body: PULL });
    expect(direct.status).toBe(200);
    expect(await corsOf(direct)).toMatchObject({ "access-control-allow-origin": null });
    expect(listed.authorized.count).toBe(before + 2);
  });

  it("lets no origin in by default", async () => {
    const refused = await preflight(`${unlisted.server.url}/sync/pull`, APP);
    expect(refused.status).toBe(405);
    const served = await fetch(`${unlisted.server.url}/sync/pull`, { method: "POST", headers: { origin: APP, authorization: TOKEN }, body: PULL });
    expect(served.status).toBe(200);
    expect(await corsOf(served)).toEqual({
      "access-control-allow-origin": null,
      "access-control-allow-credentials": null,
      "access-control-allow-methods": null,
      "access-control-allow-headers": null,
      vary: null,
    });
  });

  it("refuses an entry that is not an http(s) origin, naming it", () => {
    for (const [entry, at] of [["*", 0], ["null", 0], [`${APP}/sync`, 0], ["ftp://files.example", 0], [`${APP}?x`, 0], [5, 0]] as const) {
      const make = () => createSyncHandler({ storage: new MemoryStorage(), authorize: () => STORE_OWNER, corsOrigins: [entry as string] });
      expect(make).toThrow(InvalidInputError);
      expect(make).toThrow(`createSyncHandler(options).corsOrigins[${at}]: expected an origin`);
    }
    expect(() => createSyncHandler({ storage: new MemoryStorage(), authorize: () => STORE_OWNER, corsOrigins: APP as unknown as string[] })).toThrow(
      InvalidInputError,
    );
  });
});

describe("a page on another origin, in Chromium", () => {
  let browser: Browser;
  let sync: { server: FetchServer; authorized: { count: number } };
  let listedPage: FetchServer;
  let otherPage: FetchServer;
  beforeAll(async () => {
    const page = () =>
      serveFetchHandler(() => Promise.resolve(new Response("<!doctype html><title>app</title>", { headers: { "content-type": "text/html" } })));
    [listedPage, otherPage] = [await page(), await page()];
    sync = await syncServer([listedPage.url]);
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS], headless: true });
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([sync?.server.close(), listedPage?.close(), otherPage?.close()]);
  });

  /** What a pull from a page at `origin` gets: the answer's status and body, or the error the page saw. */
  async function pullFrom(origin: string): Promise<string> {
    const context = await browser.newContext();
    try {
      const tab = await context.newPage();
      await tab.goto(origin);
      return await tab.evaluate(
        async ({ url, token, body }) => {
          try {
            const answer = await fetch(url, { method: "POST", headers: { authorization: token, "content-type": "application/json" }, body });
            return `${answer.status} ${await answer.text()}`;
          } catch (error) {
            return `blocked: ${(error as Error).name}`;
          }
        },
        { url: `${sync.server.url}/sync/pull`, token: TOKEN, body: PULL },
      );
    } finally {
      await context.close();
    }
  }

  it("the listed origin pulls with its bearer token; the browser blocks another origin's answer", async () => {
    expect(await pullFrom(listedPage.url)).toMatch(new RegExp(`^200 \\{"v":${SYNC_PROTOCOL_VERSION},`));
    expect(await pullFrom(otherPage.url)).toBe("blocked: TypeError");
  });
});
