/**
 * The chat route's own failures (docs/SYNC.md "Errors"), served on loopback: a store that fails
 * as a disk does, its error naming the server's files, is answered `500` with an id and nothing
 * of the error, and a reply whose store fails mid-run streams the same (the AI SDK's own
 * `useChat` reads it); the host's `onError` hears the whole error under that id. A busy session
 * answers 409 naming only the chat, not the lock's process and host; the model's failure keeps
 * its message (test/ai-sdk/chat-failure.test.ts).
 */
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type SessionfoldError, WriterLockedError } from "../../core/mod.ts";
import { aiSdkProvider, chatRoute } from "../../ai-sdk/mod.ts";
import type { FetchServer } from "../../runtime-node/mod.ts";
import { createSession } from "../run/support.ts";
import { diskFailure, failingDisk, SERVER_PATH } from "../support/failing-disk.ts";
import { HELLO_ANSWER, serveChatRoute, TestChat } from "./chat-client.ts";

interface Heard {
  readonly error: SessionfoldError;
  readonly id: string;
  readonly method: string;
}

let server: FetchServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  vi.restoreAllMocks();
});

function post(url: string): Promise<Response> {
  const messages = [{ id: "u1", role: "user", parts: [{ type: "text", text: "Hi?" }] }];
  return fetch(`${url}/api/chat`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: "c1", messages }) });
}

describe("the chat route's own failures", () => {
  it("answers a failing store 500 with an id and nothing of the error, and gives onError the whole error under that id", async () => {
    const heard: Heard[] = [];
    const route = chatRoute({
      session: () => Promise.reject(diskFailure()),
      provider: aiSdkProvider(new MockLanguageModelV3({ doStream: async () => ({ stream: convertArrayToReadableStream(HELLO_ANSWER) }) })),
      onError: (error, { id, request }) => void heard.push({ error, id, method: request.method }),
    });
    server = await serveChatRoute(route);

    for (const send of [() => post(server!.url), () => fetch(`${server!.url}/api/chat/c1/stream`)]) {
      const response = await send();
      const text = await response.text();
      expect(response.status).toBe(500);
      expect(text).not.toContain("/srv");
      expect(text).not.toContain("EIO");
      const { error } = JSON.parse(text) as { error: string };
      const id = /^internal error \(id (err_[0-9a-f]{32})\)$/.exec(error)?.[1];
      expect(id).toBeDefined();
      expect(heard.at(-1)!.id).toBe(id);
      expect(heard.at(-1)!.error.message).toContain(SERVER_PATH);
      expect((heard.at(-1)!.error.cause as Error).stack).toContain("diskFailure");
    }
    expect(heard.map((h) => h.method)).toEqual(["POST", "GET"]);
  });

  it("streams a reply whose store fails mid-run as an error chunk with an id, which useChat shows; onError hears the whole error", async () => {
    const heard: Heard[] = [];
    const { storage, fail } = failingDisk();
    const { session } = await createSession(storage);
    // The model answers, and the disk fails as it does: the run cannot keep the reply.
    const model = new MockLanguageModelV3({ doStream: async () => (fail(), { stream: convertArrayToReadableStream(HELLO_ANSWER) }) });
    server = await serveChatRoute(
      chatRoute({
        session: async () => session,
        provider: aiSdkProvider(model),
        onError: (error, { id, request }) => void heard.push({ error, id, method: request.method }),
      }),
    );
    const chat = new TestChat("c1", `${server.url}/api/chat`);
    await chat.sendMessage({ text: "Hi?" });

    expect(chat.view.status).toBe("error");
    const id = /^internal error \(id (err_[0-9a-f]{32})\)$/.exec(chat.view.error?.message ?? "")?.[1];
    expect(chat.view.error?.message).not.toContain("/srv");
    expect(id).toBeDefined();
    expect(heard).toHaveLength(1);
    expect(heard[0]!.id).toBe(id);
    expect(heard[0]!.error.message).toContain(SERVER_PATH);
    expect((heard[0]!.error.cause as Error).stack).toContain("diskFailure");
  });

  it("without onError, writes the whole error to console.error once, with the id the client saw", async () => {
    const logged: unknown[][] = [];
    vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void logged.push(args));
    server = await serveChatRoute(chatRoute({ session: () => Promise.reject(diskFailure()), provider: aiSdkProvider(new MockLanguageModelV3({})) }));
    const response = await post(server.url);
    const text = await response.text();
    expect(response.status).toBe(500);
    expect(text).not.toContain("/srv");
    const id = /internal error \(id (err_[0-9a-f]{32})\)/.exec(text)?.[1];
    expect(logged).toHaveLength(1);
    expect(String(logged[0]![0])).toContain(`POST ${server.url}/api/chat failed (id ${id})`);
    expect((logged[0]![1] as Error).message).toContain(SERVER_PATH);
  });

  it("answers a busy session 409 naming the chat, not the lock's process, host or file", async () => {
    const heard: Heard[] = [];
    const locked = new WriterLockedError("sessions/chat/web/c1/writer.lock: session is locked by pid 4242 on build-host-7 (node); nothing was written");
    server = await serveChatRoute(
      chatRoute({
        session: () => Promise.reject(locked),
        provider: aiSdkProvider(new MockLanguageModelV3({})),
        onError: (error, { id, request }) => void heard.push({ error, id, method: request.method }),
      }),
    );
    const response = await post(server.url);
    expect(response.status).toBe(409);
    expect(await response.json()).toEqual({ error: 'chat "c1" is busy: another writer holds its session; try again later' });
    expect(heard).toEqual([]);
  });
});
