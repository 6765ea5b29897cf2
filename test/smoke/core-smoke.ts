/**
 * Core smoke test: one real scenario on MemoryStorage, run as a plain script under
 * Node (tsx), Deno and Bun to prove the core runs unchanged on each. No test
 * framework, no Node types: it imports only the core's public entry.
 *
 *   npx tsx test/smoke/core-smoke.ts
 *   npx deno run --quiet test/smoke/core-smoke.ts
 *   npx bun test/smoke/core-smoke.ts
 *
 * Prints `core smoke ok on <runtime>` and exits 0, or prints the failing step and exits 1.
 * To extend it, add a named step to `steps`; steps share one `SmokeContext`.
 */
import {
  CancelledError,
  decodeJsonl,
  encodeJsonDocument,
  encodeJsonl,
  InvalidIdError,
  MemoryStorage,
  MessageRecord,
  parseMetaJson,
  parseSessionRef,
  type Provider,
  type ProviderEvent,
  readLastRecord,
  type SessionMeta,
  type SessionPaths,
  sessionPaths,
  Sessions,
  type StoragePort,
  SummaryRecord,
} from "../../core/mod.ts";

// deno-lint-ignore no-explicit-any
const host = globalThis as any;

/** What the steps share. */
interface SmokeContext {
  readonly storage: StoragePort;
  readonly paths: SessionPaths;
  /** Messages committed to active.jsonl so far, in order. */
  readonly committed: MessageRecord[];
}

/** One named step of the scenario. */
interface Step {
  readonly name: string;
  run(ctx: SmokeContext): Promise<void> | void;
}

const CREATED_AT = "2026-12-02T13:00:00.000Z";
const ACTIVE_FILE = "messages/active.jsonl";
const messageSchemas = { message: MessageRecord };

function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`assertion failed: ${message}`);
}

function assertEqual(actual: unknown, expected: unknown, what: string): void {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) throw new Error(`${what}: expected ${e}, got ${a}`);
}

function message(sequence: number, role: "user" | "assistant", text: string): MessageRecord {
  return MessageRecord.parse({
    record_type: "message",
    sequence,
    message_id: `m${sequence}`,
    role,
    created_at: CREATED_AT,
    ...(role === "assistant" ? { status: "completed" } : {}),
    parts: [{ sequence: 1, type: "text", text }],
  });
}

function runtimeName(): string {
  if (host.Deno?.version?.deno) return `Deno ${host.Deno.version.deno}`;
  if (host.Bun?.version) return `Bun ${host.Bun.version}`;
  if (host.process?.versions?.node) return `Node ${host.process.versions.node}`;
  return "an unknown runtime";
}

async function readActive(ctx: SmokeContext) {
  const bytes = await ctx.storage.read(ctx.paths.active);
  assert(bytes, "active.jsonl exists");
  return decodeJsonl<MessageRecord>(bytes, { file: ACTIVE_FILE, schemas: messageSchemas });
}

const steps: Step[] = [
  {
    name: "paths are built from a session ref",
    run(ctx) {
      assertEqual(ctx.paths.meta, "agents/agent/workspaces/workspace/sessions/s1/meta.json", "meta path");
      assertEqual(ctx.paths.active, "agents/agent/workspaces/workspace/sessions/s1/messages/active.jsonl", "active path");
    },
  },
  {
    name: "meta.json is written and parsed back",
    async run(ctx) {
      const meta: SessionMeta = {
        schema_version: 1,
        session_id: "s1",
        agent_id: "agent",
        workspace_id: "workspace",
        created_at: CREATED_AT,
        updated_at: CREATED_AT,
        message_count: 0,
        history_bytes: 0,
        revision: 0,
      };
      await ctx.storage.replace(ctx.paths.meta, encodeJsonDocument(meta));
      const bytes = await ctx.storage.read(ctx.paths.meta);
      assert(bytes, "meta.json exists");
      assertEqual(parseMetaJson(bytes), meta, "parsed meta.json");
    },
  },
  {
    name: "messages are appended to active.jsonl",
    async run(ctx) {
      const batch = [message(1, "user", "hello"), message(2, "assistant", "hi there"), message(3, "user", "héllo wörld ✓")];
      for (const m of batch) {
        await ctx.storage.append(ctx.paths.active, encodeJsonl([m]));
        ctx.committed.push(m);
      }
      const result = await readActive(ctx);
      assertEqual(result.records.map((r) => r.record), ctx.committed, "records read back");
      assertEqual(result.diagnostics, [], "diagnostics of a clean file");
    },
  },
  {
    name: "a torn append is reported once as truncated_tail",
    async run(ctx) {
      const torn = encodeJsonl([message(4, "assistant", "this append is interrupted")]);
      await ctx.storage.append(ctx.paths.active, torn.subarray(0, Math.floor(torn.length / 2)));
      const result = await readActive(ctx);
      assertEqual(result.records.map((r) => r.record), ctx.committed, "complete records before the torn tail");
      assertEqual(result.diagnostics.map((d) => [d.code, d.fatal]), [["truncated_tail", false]], "diagnostics");
      assert(!result.fatal, "a torn tail is not fatal");
      assert(result.validBytes < result.totalBytes, "validBytes stops before the torn tail");
    },
  },
  {
    name: "truncating to validBytes and appending again decodes clean",
    async run(ctx) {
      const { validBytes } = await readActive(ctx);
      await ctx.storage.truncate(ctx.paths.active, validBytes);
      const next = message(4, "assistant", "retried after recovery");
      await ctx.storage.append(ctx.paths.active, encodeJsonl([next]));
      ctx.committed.push(next);
      const result = await readActive(ctx);
      assertEqual(result.records.map((r) => r.record), ctx.committed, "records after recovery");
      assertEqual(result.records.map((r) => r.line), [1, 2, 3, 4], "line numbers");
      assertEqual(result.diagnostics, [], "diagnostics after recovery");
      assert(result.validBytes === result.totalBytes && !result.missingNewline, "whole file valid");
    },
  },
  {
    name: "a segment's summary footer is read from its tail",
    async run(ctx) {
      const path = ctx.paths.segment({ start: 1, end: 4 });
      assert(path.endsWith("/messages/segments/000000000001-000000000004.jsonl"), `segment path ${path}`);
      const footer: SummaryRecord = {
        record_type: "summary",
        session_id: "s1",
        summary_id: "sum1",
        through_sequence: 4,
        text: "The user greeted the assistant.",
        created_at: CREATED_AT,
      };
      await ctx.storage.replace(path, encodeJsonl([...ctx.committed, footer]));
      const last = await readLastRecord<SummaryRecord>(ctx.storage, path, {
        file: "messages/segments/000000000001-000000000004.jsonl",
        schemas: { message: MessageRecord, summary: SummaryRecord },
        tornTailRecoverable: false,
        initialBytes: 16,
      });
      assert(last, "segment exists");
      assertEqual(last.record, footer, "footer");
      assertEqual(last.diagnostics, [], "footer diagnostics");
      assert(last.bytesRead < last.size, "only the tail was read");
      const listed = await ctx.storage.list(ctx.paths.segmentsDir);
      assertEqual(listed, ["000000000001-000000000004.jsonl"], "segments folder");
    },
  },
  {
    name: "an invalid id throws InvalidIdError",
    run() {
      for (const bad of ["agent/workspace/../x", "agent/workspace/.hidden", "agent/workspace", "a/w/s 1"]) {
        let thrown: unknown;
        try {
          sessionPaths(parseSessionRef(bad));
        } catch (error) {
          thrown = error;
        }
        assert(thrown instanceof InvalidIdError, `${JSON.stringify(bad)} throws InvalidIdError (got ${String(thrown)})`);
        assertEqual(thrown.code, "invalid-id", "error code");
      }
    },
  },
  {
    name: "the session engine runs a turn with a tool, cancels one, compacts, reopens, forks and archives",
    async run() {
      const storage = new MemoryStorage();
      const summarizer = { summarize: async ({ messages }: { messages: readonly unknown[] }) => ({ text: `summary of ${messages.length} messages` }) };
      const sessions = new Sessions({ storage, defaults: { summarizer } });
      const session = await sessions.create({ agentId: "agent", workspaceId: "workspace", sessionId: "engine", instruction: "Be brief." });
      let call = 0;
      const provider: Provider = {
        identity: { provider: "smoke", api: "test", model: "m1" },
        async *stream(request): AsyncIterable<ProviderEvent> {
          call += 1;
          if (call === 1) {
            yield { type: "tool-call", toolCallId: "c1", toolName: "clock", input: {} };
            yield { type: "usage", usage: { input_tokens: 10, output_tokens: 2 } };
          } else if (call === 2) {
            yield { type: "text-delta", text: "It is noon." };
            yield { type: "usage", usage: { input_tokens: 20, output_tokens: 4 } };
          } else {
            yield { type: "text-delta", text: "partial" };
            await new Promise<void>((resolve) => setTimeout(resolve, 20));
            request.signal.throwIfAborted();
          }
        },
      };
      const tools = [{ name: "clock", execute: () => ({ time: "12:00" }) }];
      const outcome = await session.run("What time is it?", { provider, tools }).result;
      assert(
        outcome.revision === 1 && outcome.messages.length === 3,
        `run committed 3 messages at revision 1 (got ${outcome.messages.length} at ${outcome.revision})`,
      );
      const controller = new AbortController();
      const cancelled = session.run("And tomorrow?", { provider, tools, signal: controller.signal });
      setTimeout(() => controller.abort(), 5);
      const error = await cancelled.result.then(() => undefined, (e: unknown) => e);
      assert(error instanceof CancelledError && error.revision === 2, "cancellation rejects with CancelledError at revision 2");
      assert(session.active.at(-1)?.status === "stopped", "the cancelled reply is committed as stopped");
      const compaction = await session.compact();
      // The cut falls on the turn boundary nearest floor(5/2): before the user message 4.
      assert(
        compaction.segment?.start === 1 && compaction.segment.end === 3 && compaction.revision === 3,
        "compaction closes the first turn, sequences 1..3, as a segment at revision 3",
      );
      const reopened = await sessions.open("agent/workspace/engine");
      assert(
        reopened.revision === 3 && reopened.summary?.text === "summary of 3 messages" && reopened.diagnostics.length === 0,
        "reopening sees the compacted state",
      );
      assert(reopened.compose(provider.identity).input.system === "Be brief.", "the instruction snapshot is the system");
      const fork = await sessions.fork("agent/workspace/engine", "engine-fork");
      assert(
        fork.meta.forked_from?.through_sequence === 5 && (await fork.messages({ beforeSequence: 4 })).length === 3,
        "the fork keeps every message and sequence",
      );
      await sessions.archive("agent/workspace/engine-fork");
      assert((await sessions.list({ archived: true })).length === 1, "the archived fork is listed as archived");
    },
  },
];

async function main(): Promise<number> {
  const ctx: SmokeContext = {
    storage: new MemoryStorage(),
    paths: sessionPaths(parseSessionRef("agent/workspace/s1")),
    committed: [],
  };
  for (const step of steps) {
    try {
      await step.run(ctx);
    } catch (error) {
      console.error(`core smoke FAILED on ${runtimeName()} at step "${step.name}":`);
      console.error(error instanceof Error ? (error.stack ?? error.message) : error);
      return 1;
    }
  }
  console.log(`core smoke ok on ${runtimeName()}`);
  return 0;
}

const code = await main().catch((error: unknown) => {
  console.error("core smoke FAILED:", error);
  return 1;
});
if (host.Deno) host.Deno.exit(code);
else if (host.process) host.process.exitCode = code;
