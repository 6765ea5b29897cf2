/**
 * Case 7: bytes stored per message against the raw JSON bytes of the messages, for
 * sessionfold and for LangGraph after the same messages.
 *
 * - sessionfold: N messages of ~500 bytes, each its own durable `Session.append` through
 *   `openNodeSessions`, then one `compact()` (so a segment and its footer are counted
 *   too); stored = every file of the session folder.
 * - LangGraph: the same N messages added one at a time to a `MessagesAnnotation`-style
 *   thread: one `SqliteSaver.put` per message whose checkpoint holds the messages so far
 *   (what LangGraph writes at every superstep); stored = the database file after close.
 * - raw: the JSON of each committed message record (`JSON.stringify` of what
 *   `session.messages()` returns: role, parts, ids, time, sequence), summed.
 *
 * @module
 */
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { type MessageRecord } from "../../../core/mod.ts";
import { openNodeSessions } from "../../../runtime-node/mod.ts";
import { LANGGRAPH_THREAD } from "../lib/bench-ref.ts";
import { langchainMessages } from "../lib/fixtures.ts";
import type { CaseContext } from "../lib/result.ts";
import { appendMessage } from "./append.ts";
import { instantSummarizer } from "./compact.ts";
import { withoutBatchMark } from "../../../core/internal.ts";

/** Total size of every file below `dir`. */
export async function treeBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? await treeBytes(path) : (await stat(path)).size;
  }
  return total;
}

export async function bytesCase(ctx: CaseContext): Promise<void> {
  const n = ctx.quick ? 200 : 1000;
  const store = await openNodeSessions({ root: join(ctx.tmp, "store") });
  let records: MessageRecord[];
  let stored: number;
  let inputJson = 0;
  try {
    const session = await store.sessions.create({ agentId: "bench", workspaceId: "w1", sessionId: "bytes" });
    for (let i = 0; i < n; i++) {
      const message = appendMessage(i);
      inputJson += JSON.stringify(message).length;
      await session.append(message);
    }
    await session.compact({ summarizer: instantSummarizer });
    const reopened = await store.sessions.open(session.ref);
    records = [];
    for (const range of await reopened.segments()) records.push(...(await reopened.readSegment(range)).messages);
    records.push(...reopened.active);
    stored = await treeBytes(join(store.root, ...session.paths.dir.split("/")));
  } finally {
    await store.close();
  }
  if (records.length !== n) throw new Error(`case 7: read back ${records.length} of ${n} messages`);
  const raw = records.reduce((sum, r) => sum + new TextEncoder().encode(JSON.stringify(withoutBatchMark(r))).length, 0);
  ctx.log(`case 7: sessionfold ${stored} bytes for ${n} messages (raw JSON ${raw}, host input JSON ${inputJson})`);
  ctx.emit({
    case: 7,
    name: `bytes-per-message.sessionfold.n=${n}`,
    value: stored / n,
    unit: "bytes/message",
    baseline: raw / n,
    baselineName: "raw JSON of each committed message record",
    ratio: stored / raw,
    ratioMeaning: "value / baseline",
    target: { op: "<=", limit: 1.1, text: "≤ 1.1×" },
    note:
      `every file of the session (meta.json, active.jsonl, 1 segment with its summary footer) after ${n} appends and one compaction; against the host's input JSON (no ids, times, sequences) the ratio is ${
        (stored / inputJson).toFixed(2)
      }`,
  });

  const { SqliteSaver } = await import("@langchain/langgraph-checkpoint-sqlite");
  const { emptyCheckpoint, uuid6 } = await import("@langchain/langgraph-checkpoint");
  const file = join(ctx.tmp, "langgraph.sqlite");
  const saver = SqliteSaver.fromConnString(file);
  const messages = await langchainMessages(records);
  let config = { configurable: { thread_id: LANGGRAPH_THREAD, checkpoint_ns: "" } as Record<string, string> };
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const checkpoint = { ...emptyCheckpoint(), id: uuid6(i), channel_values: { messages: messages.slice(0, i + 1) }, channel_versions: { messages: i + 1 } };
    config = (await saver.put(config, checkpoint, { source: "loop", step: i, parents: {} })) as typeof config;
  }
  saver.db.close();
  const lgBytes = (await stat(file)).size;
  ctx.log(`case 7: LangGraph ${lgBytes} bytes for ${n} messages in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  ctx.emit({
    case: 7,
    name: `bytes-per-message.langgraph.n=${n}`,
    value: lgBytes / n,
    unit: "bytes/message",
    baseline: raw / n,
    baselineName: "raw JSON of each committed message record",
    ratio: lgBytes / raw,
    ratioMeaning: "value / baseline",
    note: `SqliteSaver database after ${n} checkpoints, one per added message (each holds every message so far: disk grows with N²)`,
  });
}
