/**
 * A local HTTP server (node:http on 127.0.0.1, an OS-assigned port) that answers like a
 * model API: each request takes the next scripted reply, either a JSON error with a
 * status or a server-sent-event stream, optionally left open until the client goes away.
 * It records each request's path and JSON body, and resolves `disconnected` when a
 * client closed a stream that was still open. Not a test file itself.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One server-sent event: `event:` name (Anthropic and Responses name theirs) and JSON or raw data. */
export interface WireEvent {
  readonly event?: string;
  readonly data: unknown;
}

/** A scripted reply. */
export type WireReply =
  | { readonly status: number; readonly body: unknown }
  | { readonly events: readonly WireEvent[]; readonly hang?: boolean };

/** A running wire server. */
export interface WireServer {
  readonly baseUrl: string;
  readonly requests: { readonly path: string; readonly body: Record<string, unknown> }[];
  /** Resolves when a client closed a stream the server kept open (`hang`). */
  readonly disconnected: Promise<void>;
  /** Resolves when a hanging stream has sent all its events. */
  readonly hanging: Promise<void>;
  close(): Promise<void>;
}

/** Starts a server that plays `replies` in order, one per request. */
export async function startWireServer(replies: readonly WireReply[]): Promise<WireServer> {
  const queue = [...replies];
  const requests: WireServer["requests"] = [];
  let onDisconnect!: () => void;
  let onHang!: () => void;
  const disconnected = new Promise<void>((resolve) => (onDisconnect = resolve));
  const hanging = new Promise<void>((resolve) => (onHang = resolve));
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      requests.push({ path: req.url ?? "", body: text === "" ? {} : (JSON.parse(text) as Record<string, unknown>) });
      const reply = queue.shift();
      if (!reply) {
        res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "no scripted reply left" } }));
        return;
      }
      if ("status" in reply) {
        res.writeHead(reply.status, { "content-type": "application/json" }).end(JSON.stringify(reply.body));
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
      for (const event of reply.events) {
        const data = typeof event.data === "string" ? event.data : JSON.stringify(event.data);
        res.write(`${event.event ? `event: ${event.event}\n` : ""}data: ${data}\n\n`);
      }
      if (reply.hang) {
        res.on("close", () => onDisconnect());
        onHang();
      } else res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    disconnected,
    hanging,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** OpenAI chat-completions chunks: `choices[0].delta`, usage in the last chunk, then `[DONE]`. */
export const chat = {
  chunk: (delta: Record<string, unknown>, finish: string | null = null): WireEvent => ({
    data: {
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      created: 1_700_000_000,
      model: "gpt-test",
      choices: [{ index: 0, delta, finish_reason: finish }],
    },
  }),
  usage: (usage: Record<string, unknown>): WireEvent => ({
    data: { id: "chatcmpl-1", object: "chat.completion.chunk", created: 1_700_000_000, model: "gpt-test", choices: [], usage },
  }),
  done: { data: "[DONE]" } as WireEvent,
};

/** OpenAI Responses events: named, each with its `type`. */
export function responsesEvent(type: string, fields: Record<string, unknown>, sequence: number): WireEvent {
  return { event: type, data: { type, sequence_number: sequence, ...fields } };
}

/** Anthropic messages events: named, each with its `type`. */
export function anthropicEvent(type: string, fields: Record<string, unknown> = {}): WireEvent {
  return { event: type, data: { type, ...fields } };
}
