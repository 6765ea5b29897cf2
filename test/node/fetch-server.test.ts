/**
 * serveFetchHandler's answers stream: a chunk reaches the client when the handler produces it
 * (a useChat reply through `chatRoute`), a body that fails after its first chunk cuts the
 * connection, and a client that goes away cancels the body.
 */
import { afterEach, describe, expect, it } from "vitest";
import { type FetchServer, serveFetchHandler } from "../../runtime-node/mod.ts";

const encoder = new TextEncoder();

/** A body that sends `first`, then waits for `release()` before `rest`; `cancelled` resolves if its reader cancels it. */
function heldBody(first: string, rest: string) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let noticeCancel!: () => void;
  const cancelled = new Promise<void>((resolve) => (noticeCancel = resolve));
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(encoder.encode(first));
      await released;
      controller.enqueue(encoder.encode(rest));
      controller.close();
    },
    cancel: () => noticeCancel(),
  });
  return { body, release, cancelled };
}

describe("serveFetchHandler", () => {
  let server: FetchServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("sends each chunk of an answer as it is produced, before the rest exists", async () => {
    const { body, release } = heldBody("data: first\n\n", "data: second\n\n");
    server = await serveFetchHandler(async () => new Response(body, { headers: { "content-type": "text/event-stream" } }));
    const response = await fetch(server.url, { method: "POST", body: "{}" });
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    expect((await reader.read()).value).toBe("data: first\n\n");
    release();
    let rest = "";
    for (let next = await reader.read(); !next.done; next = await reader.read()) rest += next.value;
    expect(rest).toBe("data: second\n\n");
  });

  it("cuts the connection when a body fails after its first chunk: the client's read fails, never a part taken for the whole", async () => {
    let fail!: () => void;
    const failing = new Promise<void>((resolve) => (fail = resolve));
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(encoder.encode('{"half":'));
        await failing;
        controller.error(new Error("the store went away"));
      },
    });
    server = await serveFetchHandler(async () => new Response(body, { headers: { "content-type": "application/json" } }));
    const reader = (await fetch(server.url)).body!.getReader();
    await reader.read();
    fail();
    await expect(reader.read()).rejects.toThrow(TypeError);
  });

  it("cancels the answer's body when its client goes away", async () => {
    const { body, cancelled } = heldBody("data: first\n\n", "never sent");
    server = await serveFetchHandler(async () => new Response(body));
    const client = new AbortController();
    const response = await fetch(server.url, { signal: client.signal });
    await response.body!.getReader().read();
    client.abort();
    await cancelled;
  });
});
