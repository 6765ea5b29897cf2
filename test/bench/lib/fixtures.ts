/**
 * The synthetic histories of case 1 on disk, one per format, all holding the same
 * messages: a sessionfold tree, a plain JSONL file, a pi-coding-agent session file and
 * a LangGraph SqliteSaver database. Built by writing the files directly (no commits,
 * no fsync: building is not what is measured).
 *
 * @module
 */
import { createWriteStream } from "node:fs";
import { mkdir, open, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import {
  ACTIVE_SIZE,
  BENCH_PROVIDER,
  BENCH_REF,
  historyPlan,
  syntheticFooter,
  syntheticMessage,
  timestampOf,
  writePlainJsonl,
  writeSyntheticSession,
} from "./synth.ts";
import { LANGGRAPH_THREAD } from "./bench-ref.ts";
import type { MessageRecord } from "../../../core/mod.ts";

/** Writes the sessionfold tree of `n` messages under the store `root`, `activeSize` of them in Active. */
export async function buildSessionfold(root: string, n: number, activeSize = ACTIVE_SIZE): Promise<number> {
  return writeSyntheticSession(
    async (path, bytes) => {
      const file = join(root, ...path.split("/"));
      await mkdir(dirname(file), { recursive: true, mode: 0o700 });
      await writeFile(file, bytes, { mode: 0o600 });
    },
    n,
    BENCH_REF,
    activeSize,
  );
}

/** Creates an empty sessionfold session (meta.json only) under `root`. */
export async function buildEmptySessionfold(root: string): Promise<void> {
  await buildSessionfold(root, 0);
}

/** Writes the plain JSONL file of `n` messages (footers included). */
export async function buildPlainJsonl(file: string, n: number): Promise<number> {
  await mkdir(dirname(file), { recursive: true });
  const handle = await open(file, "w");
  try {
    return await writePlainJsonl(async (bytes) => void (await handle.write(bytes)), n);
  } finally {
    await handle.close();
  }
}

/** A synthetic message as pi-coding-agent stores it (pi-ai's `UserMessage` / `AssistantMessage`). */
export function piMessage(m: MessageRecord): Record<string, unknown> {
  const text = m.parts[0]!.type === "text" ? m.parts[0]!.text : "";
  const timestamp = Date.parse(m.created_at);
  if (m.role === "user") return { role: "user", content: [{ type: "text", text }], timestamp };
  const usage = m.usage!;
  return {
    role: "assistant",
    content: [{ type: "text", text }],
    api: "openai-responses",
    provider: BENCH_PROVIDER.provider,
    model: BENCH_PROVIDER.model,
    usage: {
      input: usage.input_tokens,
      output: usage.output_tokens,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: usage.total_tokens ?? usage.input_tokens + usage.output_tokens,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "stop",
    timestamp,
  };
}

/**
 * Writes a pi-coding-agent session file (format version 3) of the same history: a header,
 * one `message` entry per message chained by `parentId`, and a `compaction` entry where
 * each sessionfold segment closes (same summary text, keeping nothing before it), so
 * `buildSessionContext()` yields the same model input as sessionfold's compose: the
 * latest summary plus the last 100 messages.
 */
export async function buildPiSession(file: string, n: number): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const plan = historyPlan(n);
  const closesAt = new Set(plan.segments.map((s) => s.end));
  const out = createWriteStream(file);
  const write = (text: string) => (out.write(text) ? Promise.resolve() : new Promise<void>((resolve) => out.once("drain", resolve)));
  let buffer = `${
    JSON.stringify({ type: "session", version: 3, id: "0195f000-0000-7000-8000-000000000001", timestamp: timestampOf(0), cwd: "/work/bench" })
  }\n`;
  let parent: string | null = null;
  const messageId = (s: number) => `m${s.toString(16).padStart(7, "0")}`;
  for (let s = 1; s <= n; s++) {
    const id = messageId(s);
    buffer += `${JSON.stringify({ type: "message", id, parentId: parent, timestamp: timestampOf(s), message: piMessage(syntheticMessage(s)) })}\n`;
    parent = id;
    if (closesAt.has(s)) {
      const footer = syntheticFooter(BENCH_REF.sessionId, s);
      const cid = `c${s.toString(16).padStart(7, "0")}`;
      buffer += `${
        JSON.stringify({
          type: "compaction",
          id: cid,
          parentId: parent,
          timestamp: timestampOf(s),
          summary: footer.text,
          firstKeptEntryId: messageId(s + 1),
          tokensBefore: 128_000,
        })
      }\n`;
      parent = cid;
    }
    if (buffer.length > 1 << 20) {
      await write(buffer);
      buffer = "";
    }
  }
  await write(buffer);
  await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
}

/** The LangChain message of a synthetic record (what a LangGraph `MessagesAnnotation` state holds). */
export async function langchainMessages(records: readonly MessageRecord[]): Promise<unknown[]> {
  const { AIMessage, HumanMessage } = await import("@langchain/core/messages");
  return records.map((m) => {
    const text = m.parts[0]!.type === "text" ? m.parts[0]!.text : "";
    if (m.role === "user") return new HumanMessage({ content: text, id: m.message_id });
    const usage = m.usage!;
    return new AIMessage({
      content: text,
      id: m.message_id,
      usage_metadata: { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens, total_tokens: usage.total_tokens ?? 0 },
      response_metadata: { model_name: BENCH_PROVIDER.model },
    });
  });
}

/**
 * Writes a LangGraph SqliteSaver database whose latest checkpoint is what a
 * `MessagesAnnotation` thread of `n` messages holds: every message (LangGraph keeps the
 * history in the state; deleting old messages from it would lose them), the latest
 * summary, and how many messages it covers. Only the latest checkpoint is written (a
 * real thread also holds every earlier one: see case 7), which is all `getTuple` reads.
 */
export async function buildLangGraph(file: string, n: number): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const { SqliteSaver } = await import("@langchain/langgraph-checkpoint-sqlite");
  const { emptyCheckpoint, uuid6 } = await import("@langchain/langgraph-checkpoint");
  const plan = historyPlan(n);
  const records: MessageRecord[] = [];
  for (let s = 1; s <= n; s++) records.push(syntheticMessage(s));
  const messages = await langchainMessages(records);
  records.length = 0;
  const last = plan.segments.at(-1);
  const saver = SqliteSaver.fromConnString(file);
  try {
    const checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(n),
      channel_values: { messages, summary: last ? syntheticFooter(BENCH_REF.sessionId, last.end).text : "", summarized_through: last?.end ?? 0 },
      channel_versions: { messages: n, summary: plan.segments.length + 1, summarized_through: plan.segments.length + 1 },
    };
    await saver.put({ configurable: { thread_id: LANGGRAPH_THREAD, checkpoint_ns: "" } }, checkpoint, { source: "loop", step: n, parents: {} });
  } finally {
    saver.db.close();
  }
}
