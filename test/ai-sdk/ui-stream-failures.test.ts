/**
 * What `runToUIMessageStream` tells its client of a failed run (docs/SYNC.md "Errors"): the
 * model's failure as it is, anything else an id, the whole error going to `console.error`
 * under it (as the AI SDK's own `toUIMessageStream` keeps a server's details from the client);
 * a host's `onError` says what the chunk says instead. Read with the AI SDK's own
 * `readUIMessageStream`, as a `useChat` client reads the stream.
 */
import { readUIMessageStream, type UIMessageChunk } from "ai";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { InvalidInputError, MemoryStorage, type RunHandle } from "../../core/mod.ts";
import { aiSdkProvider, runToUIMessageStream } from "../../ai-sdk/mod.ts";
import { createSession } from "../run/support.ts";
import { failingDisk, SERVER_PATH } from "../support/failing-disk.ts";
import { HELLO_ANSWER } from "./chat-client.ts";

afterEach(() => void vi.restoreAllMocks());

/** A run of a session whose disk fails once the model answers: the run cannot keep the reply. */
async function runOnFailingDisk(): Promise<RunHandle> {
  const { storage, fail } = failingDisk();
  const { session } = await createSession(storage);
  const model = new MockLanguageModelV3({ doStream: async () => (fail(), { stream: convertArrayToReadableStream(HELLO_ANSWER) }) });
  return session.run("Hi?", { provider: aiSdkProvider(model) });
}

/** The text of the stream's `error` chunk, read as `useChat` reads it (its `onError` hears it). */
async function errorText(stream: ReadableStream<UIMessageChunk>): Promise<string | undefined> {
  let text: string | undefined;
  for await (const _ of readUIMessageStream({ stream, onError: (error) => void (text = (error as Error).message) }));
  return text;
}

describe("runToUIMessageStream's failures", () => {
  it("streams a store's failure as an id, nothing of the error, and gives console.error the whole error under that id", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const text = await errorText(runToUIMessageStream(await runOnFailingDisk()));

    const id = /^internal error \(id (err_[0-9a-f]{32})\)$/.exec(text ?? "")?.[1];
    expect(text).not.toContain("/srv");
    expect(id).toBeDefined();
    expect(logged).toHaveBeenCalledTimes(1);
    const [line, error] = logged.mock.calls[0]!;
    expect(line).toBe(`sessionfold UI message stream: failed (id ${id}):`);
    expect((error as Error).message).toContain(SERVER_PATH);
  });

  it("streams the model's own failure as it is, and reports nothing", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const { session } = await createSession(new MemoryStorage());
    const model = new MockLanguageModelV3({ doStream: () => Promise.reject(new Error("the provider answered 429: slow down")) });
    const text = await errorText(runToUIMessageStream(session.run("Hi?", { provider: aiSdkProvider(model) })));

    expect(text).toContain("the provider answered 429: slow down");
    expect(logged).not.toHaveBeenCalled();
  });

  it("streams what the host's onError says instead, and reports nothing itself", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const seen: unknown[] = [];
    const stream = runToUIMessageStream(await runOnFailingDisk(), { onError: (error) => (seen.push(error), "the reply could not be kept") });

    expect(await errorText(stream)).toBe("the reply could not be kept");
    expect((seen[0] as Error).message).toContain(SERVER_PATH);
    expect(logged).not.toHaveBeenCalled();
  });

  it("refuses an option it does not know and an onError that is not a function", async () => {
    const { session } = await createSession(new MemoryStorage());
    const run = () =>
      session.run("Hi?", {
        provider: aiSdkProvider(new MockLanguageModelV3({ doStream: async () => ({ stream: convertArrayToReadableStream(HELLO_ANSWER) }) })),
      });
    const first = run();
    expect(() => runToUIMessageStream(first, { onErorr: () => "" } as never)).toThrow(InvalidInputError);
    expect(() => runToUIMessageStream(first, { onError: "hidden" } as never)).toThrow(/onError/);
    await first.result;
  });
});
