/**
 * Property-based tests of the pi, Codex and Claude Code readers: generated valid files,
 * fed in random chunk sizes (the readers stream), truncated at random byte offsets or with
 * a random line corrupted. The reader never throws an untyped error and never drops a
 * record silently: a damaged file reads exactly as its undamaged prefix (a torn final line
 * ignored and reported), or is refused with a typed error naming the damaged line.
 */
import fc from "fast-check";
import { afterAll, describe, it } from "vitest";
import { type MessageRecord, SessionfoldError, UnsupportedSchemaError } from "../../core/mod.ts";
import { FormatError, readClaudeCode, readCodex, readPi } from "../../core/formats/mod.ts";
import type { Diagnostic } from "../../core/mod.ts";
import {
  check,
  cutArb,
  EXACT_RUNS,
  expectErrorAt,
  fuzzLog,
  garbageLines,
  isUnterminatedLast,
  layoutLines,
  printFuzzLog,
  replaceLine,
  RUNS,
  same,
  textArb,
  truncationOutcome,
} from "./fuzz-support.ts";

interface Read {
  readonly messages: readonly MessageRecord[];
  readonly diagnostics: readonly Diagnostic[];
}
type Outcome = { ok: true; value: Read } | { ok: false; error: FormatError | UnsupportedSchemaError };

/** What one format's generator produces: the lines, and what reading them whole must give. */
interface Generated {
  readonly lines: string[];
  readonly messages: number;
  readonly toolStates: string[];
}

interface Format {
  readonly name: string;
  readonly file: string;
  readonly generate: fc.Arbitrary<Generated>;
  /** Semantically wrong lines for position `index` of `lines` (each fails at its own line). */
  readonly corrupt: (lines: readonly string[], index: number) => string[];
  readonly read: (chunks: AsyncIterable<Uint8Array>, file: string) => Promise<Read>;
}

const enc = (v: unknown) => JSON.stringify(v);
const ISO = (s: number) => new Date(Date.UTC(2026, 0, 1) + s * 1000).toISOString();

// ---- pi ------------------------------------------------------------------------------
const piTurn = fc.record({
  kind: fc.integer({ min: 0, max: 5 }),
  text: textArb,
  calls: fc.integer({ min: 0, max: 2 }),
  error: fc.boolean(),
  back: fc.nat({ max: 3 }),
});
const piGenerate = fc.array(piTurn, { maxLength: 7 }).map((turns): Generated => {
  const lines = [enc({ type: "session", version: 3, id: "fz", timestamp: ISO(0), cwd: "/fz" })];
  let n = 0;
  let parent: string | null = null;
  const ids: string[] = [];
  const entry = (fields: Record<string, unknown>) => {
    n += 1;
    const id = `e${n}`;
    lines.push(enc({ ...fields, id, parentId: parent, timestamp: ISO(n) }));
    ids.push(id);
    parent = id;
    return id;
  };
  let messages = 0;
  const toolStates: string[] = [];
  for (const [t, turn] of turns.entries()) {
    if (turn.kind <= 1) {
      entry({
        type: "message",
        message: {
          role: "user",
          content: turn.kind === 0 ? turn.text : [{ type: "text", text: turn.text }, { type: "image", data: "AA==", mimeType: "image/png" }],
          timestamp: n,
        },
      });
      messages += 1;
    } else if (turn.kind <= 3) {
      const calls = Array.from({ length: turn.calls }, (_, k) => ({ type: "toolCall", id: `c${t}_${k}`, name: "read", arguments: { k } }));
      entry({
        type: "message",
        message: {
          role: "assistant",
          content: [{ type: "thinking", thinking: turn.text }, { type: "text", text: turn.text }, ...calls],
          api: "a",
          provider: "p",
          model: "m",
          usage: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0, totalTokens: 3, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
          stopReason: "stop",
          timestamp: n,
        },
      });
      messages += 1;
      for (const call of calls) {
        entry({
          type: "message",
          message: {
            role: "toolResult",
            toolCallId: call.id,
            toolName: "read",
            content: [{ type: "text", text: turn.text }],
            isError: turn.error,
            timestamp: n,
          },
        });
        toolStates.push(turn.error ? "output-error" : "output-available");
      }
    } else if (turn.kind === 4) {
      entry({ type: "model_change", provider: "p", modelId: turn.text || "m" });
    } else {
      entry({ type: "custom", customType: "x", data: { t } });
    }
  }
  return { lines, messages, toolStates };
});
function piCorrupt(lines: readonly string[], index: number): string[] {
  if (index === 0) return [enc({ type: "session", version: 9, id: "fz", timestamp: ISO(0), cwd: "/" }), enc({ type: "entry" })];
  const original = JSON.parse(lines[index]!) as { id: string; parentId: string | null; timestamp: string };
  const same = { id: original.id, parentId: original.parentId, timestamp: original.timestamp };
  return [
    enc({ type: "message", ...same, message: { role: "toolResult", toolCallId: "zz-none", toolName: "x", content: [], isError: false, timestamp: 0 } }),
    enc({ type: "message", ...same, message: { role: "narrator", content: "x" } }),
    enc({ type: "hologram", ...same }),
    enc({ type: "custom", ...same, parentId: "zz-missing", customType: "x" }),
  ];
}

// ---- Codex ---------------------------------------------------------------------------
const codexTurn = fc.record({ kind: fc.integer({ min: 0, max: 5 }), text: textArb, ok: fc.boolean() });
const codexGenerate = fc.array(codexTurn, { maxLength: 8 }).map((turns): Generated => {
  let s = 0;
  const line = (type: string, payload: unknown) => enc({ timestamp: ISO(s += 1), type, payload });
  const lines = [line("session_meta", { id: "fz", timestamp: ISO(0), cwd: "/fz", originator: "t", cli_version: "0" })];
  let messages = 0;
  let inTurn = false;
  const toolStates: string[] = [];
  const modelOutput = () => {
    if (!inTurn) messages += 1;
    inTurn = true;
  };
  for (const [t, turn] of turns.entries()) {
    switch (turn.kind) {
      case 0:
        lines.push(line("response_item", { type: "message", role: "user", content: [{ type: "input_text", text: turn.text }] }));
        messages += 1;
        inTurn = false;
        break;
      case 1:
        lines.push(line("response_item", { type: "message", role: "assistant", content: [{ type: "output_text", text: turn.text }] }));
        modelOutput();
        break;
      case 2:
        lines.push(line("response_item", { type: "reasoning", summary: [{ type: "summary_text", text: turn.text }], encrypted_content: "e" }));
        modelOutput();
        break;
      case 3:
        lines.push(line("response_item", { type: "function_call", name: "shell", arguments: enc({ t }), call_id: `c${t}` }));
        lines.push(
          line("response_item", { type: "function_call_output", call_id: `c${t}`, output: turn.ok ? turn.text : { content: turn.text, success: false } }),
        );
        toolStates.push(turn.ok ? "output-available" : "output-error");
        modelOutput();
        break;
      case 4:
        lines.push(line("event_msg", { type: "token_count", info: null }));
        break;
      default:
        lines.push(line("turn_context", { cwd: "/fz", model: "gpt-5" }));
    }
  }
  return { lines, messages, toolStates };
});
function codexCorrupt(_lines: readonly string[], index: number): string[] {
  const at = ISO(1);
  if (index === 0) return [enc({ timestamp: at, type: "response_item", payload: { type: "message", role: "user", content: [] } })];
  return [
    enc({ timestamp: at, type: "response_item", payload: { type: "function_call_output", call_id: "zz-none", output: "x" } }),
    enc({ timestamp: at, type: "response_item", payload: { type: "hologram" } }),
    enc({ timestamp: at, type: "world_state", payload: {} }),
    enc({ timestamp: "yesterday", type: "event_msg", payload: { type: "x" } }),
  ];
}

// ---- Claude Code ---------------------------------------------------------------------
const claudeTurn = fc.record({ kind: fc.integer({ min: 0, max: 4 }), text: textArb, calls: fc.integer({ min: 0, max: 2 }), error: fc.boolean() });
const claudeGenerate = fc.array(claudeTurn, { maxLength: 7 }).map((turns): Generated => {
  const lines: string[] = [];
  let n = 0;
  let parent: string | null = null;
  const record = (fields: Record<string, unknown>, sidechain = false) => {
    n += 1;
    const uuid = `u${n}`;
    lines.push(enc({ parentUuid: parent, isSidechain: sidechain, sessionId: "fz", cwd: "/fz", uuid, timestamp: ISO(n), ...fields }));
    if (!sidechain) parent = uuid;
  };
  // A transcript starts with the user's first message (an empty one is refused: nothing to import).
  record({ type: "user", message: { role: "user", content: "start" } });
  let messages = 1;
  const toolStates: string[] = [];
  for (const [t, turn] of turns.entries()) {
    if (turn.kind <= 1) {
      record({ type: "user", message: { role: "user", content: turn.kind === 0 ? turn.text : [{ type: "text", text: turn.text }] } });
      messages += 1;
    } else if (turn.kind === 2) {
      const calls = Array.from({ length: turn.calls }, (_, k) => ({ type: "tool_use", id: `t${t}_${k}`, name: "Read", input: { k } }));
      // One API message split over two records, as Claude Code writes it.
      record({
        type: "assistant",
        message: { id: `msg${t}`, role: "assistant", model: "claude", content: [{ type: "thinking", thinking: turn.text, signature: "s" }] },
      });
      record({
        type: "assistant",
        message: {
          id: `msg${t}`,
          role: "assistant",
          model: "claude",
          content: [{ type: "text", text: turn.text }, ...calls],
          usage: { input_tokens: 1, output_tokens: 2 },
        },
      });
      messages += 1;
      if (calls.length > 0) {
        record({
          type: "user",
          message: {
            role: "user",
            content: calls.map((c) => ({ type: "tool_result", tool_use_id: c.id, content: turn.text, ...(turn.error ? { is_error: true } : {}) })),
          },
        });
        for (const _ of calls) toolStates.push(turn.error ? "output-error" : "output-available");
      }
    } else if (turn.kind === 3) {
      record({ type: "user", message: { role: "user", content: "side" } }, true);
    } else {
      lines.push(enc({ type: "summary", summary: turn.text, leafUuid: parent ?? "none" }));
    }
  }
  return { lines, messages, toolStates };
});
function claudeCorrupt(lines: readonly string[], index: number): string[] {
  const original = JSON.parse(lines[index]!) as { uuid?: string; parentUuid?: string | null; timestamp?: string };
  const base = {
    uuid: original.uuid ?? "zz-u",
    parentUuid: original.parentUuid ?? null,
    timestamp: original.timestamp ?? ISO(1),
    sessionId: "fz",
    isSidechain: false,
  };
  return [
    enc({ ...base, type: "user", message: { role: "user", content: [{ type: "tool_result", tool_use_id: "zz-none", content: "x" }] } }),
    enc({ ...base, type: "assistant", message: { role: "assistant", model: "m", content: [{ type: "hologram" }] } }),
    enc({ ...base, type: "narrator" }),
    enc({ ...base, type: "user", parentUuid: "zz-missing", message: { role: "user", content: "x" } }),
  ];
}

const FORMATS: Format[] = [
  {
    name: "pi",
    file: "fz.jsonl",
    generate: piGenerate,
    corrupt: piCorrupt,
    read: async (c, f) => {
      const r = await readPi(c, f);
      return { messages: r.session.messages, diagnostics: r.diagnostics };
    },
  },
  {
    name: "codex",
    file: "rollout-fz.jsonl",
    generate: codexGenerate,
    corrupt: codexCorrupt,
    read: async (c, f) => {
      const r = await readCodex(c, f);
      return { messages: r.session.messages, diagnostics: r.diagnostics };
    },
  },
  {
    name: "claude-code",
    file: "fz-claude.jsonl",
    generate: claudeGenerate,
    corrupt: claudeCorrupt,
    read: async (c, f) => {
      const r = await readClaudeCode(c, f);
      return { messages: r.session.messages, diagnostics: r.diagnostics };
    },
  },
];

async function* chunked(bytes: Uint8Array, size: number): AsyncIterable<Uint8Array> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

async function outcome(format: Format, bytes: Uint8Array, chunk: number): Promise<Outcome> {
  try {
    return { ok: true, value: await format.read(chunked(bytes, chunk), format.file) };
  } catch (error) {
    if (!(error instanceof SessionfoldError)) throw new Error(`untyped error: ${String(error)}`, { cause: error });
    if (!(error instanceof FormatError || error instanceof UnsupportedSchemaError)) {
      throw new Error(`unexpected error class ${error.name}: ${error.message}`, { cause: error });
    }
    return { ok: false, error };
  }
}

/** The outcome of reading the first `kept` lines of the generated file, undamaged. */
async function prefixOutcome(format: Format, lines: readonly string[], kept: number): Promise<Outcome> {
  return outcome(format, layoutLines(lines.slice(0, kept), true).bytes, 1 << 20);
}

function sameOutcome(actual: Outcome, expected: Outcome, tornLine: number | null, file: string): void {
  if (!expected.ok) {
    check(!actual.ok, () => `expected the prefix's refusal (${expected.error.message}), the read succeeded`);
    // The same refusal at the same line (a torn header reads "interrupted", an absent one "empty").
    if (!actual.ok) same([actual.error.name, actual.error.details.line], [expected.error.name, expected.error.details.line]);
    return;
  }
  check(actual.ok, () => `expected success, got ${!actual.ok ? actual.error.message : ""}`);
  if (!actual.ok) return;
  same(actual.value.messages, expected.value.messages);
  same(actual.value.diagnostics.map((d) => [d.code, d.line, d.file]), tornLine === null ? [] : [["truncated_tail", tornLine, file]]);
}

async function timedAsync(name: string, runs: number, body: () => Promise<void>): Promise<void> {
  const start = performance.now();
  await body();
  const entry = fuzzLog.get(name) ?? { cases: 0, ms: 0 };
  entry.cases += runs;
  entry.ms += performance.now() - start;
  fuzzLog.set(name, entry);
}

const chunkArb = fc.constantFrom(1, 3, 16, 1 << 20);

for (const format of FORMATS) {
  describe(`${format.name} reader under damage`, () => {
    it(`generated files read exactly, in any chunking (${EXACT_RUNS} cases)`, async () => {
      await timedAsync(format.name, EXACT_RUNS, () =>
        fc.assert(
          fc.asyncProperty(format.generate, fc.boolean(), chunkArb, async (generated, finalNewline, chunk) => {
            const result = await outcome(format, layoutLines(generated.lines, finalNewline).bytes, chunk);
            check(result.ok, () => `undamaged file refused: ${!result.ok ? result.error.message : ""}`);
            if (!result.ok) return;
            check(result.value.messages.length === generated.messages, () => `expected ${generated.messages} messages, got ${result.value.messages.length}`);
            same(
              result.value.messages.flatMap((m) => m.parts.filter((p) => p.type === "tool").map((p) => (p as { state: string }).state)),
              generated.toolStates,
            );
            same(result.value.diagnostics, []);
          }),
          { numRuns: EXACT_RUNS },
        ));
    });

    it(`truncated at any byte: the undamaged prefix exactly, the torn line reported (${RUNS} cases)`, async () => {
      const cases = fc.tuple(format.generate, fc.boolean()).chain(([generated, finalNewline]) => {
        const file = layoutLines(generated.lines, finalNewline);
        return fc.tuple(fc.constant(generated), fc.constant(file), cutArb(file), chunkArb);
      });
      await timedAsync(format.name, RUNS, () =>
        fc.assert(
          fc.asyncProperty(cases, async ([generated, file, cut, chunk]) => {
            const { kept, tornLine } = truncationOutcome(file, cut);
            const actual = await outcome(format, file.bytes.subarray(0, cut), chunk);
            sameOutcome(actual, await prefixOutcome(format, generated.lines, kept), tornLine, format.file);
          }),
          { numRuns: RUNS },
        ));
    });

    it(`a corrupted line: refused at its line, or, as an unterminated final line, ignored exactly (${RUNS} cases)`, async () => {
      const cases = fc.tuple(format.generate, fc.boolean()).chain(([generated, finalNewline]) => {
        const file = layoutLines(generated.lines, finalNewline);
        const index = fc.nat({ max: Math.max(0, generated.lines.length - 1) });
        return fc.tuple(fc.constant(generated), fc.constant(file), index, fc.nat({ max: 1000 }), chunkArb);
      });
      await timedAsync(format.name, RUNS, () =>
        fc.assert(
          fc.asyncProperty(cases, async ([generated, file, index, pick, chunk]) => {
            if (generated.lines.length === 0) return;
            const options = [...garbageLines, ...format.corrupt(generated.lines, index).map((l) => new TextEncoder().encode(l))];
            const bytes = replaceLine(file, index, options[pick % options.length]!);
            const actual = await outcome(format, bytes, chunk);
            if (isUnterminatedLast(file, index)) {
              // An unknown version is a complete record, refused even unterminated.
              if (!actual.ok && actual.error instanceof UnsupportedSchemaError) return expectErrorAt(actual.error, format.file, index + 1, "unsupported");
              sameOutcome(actual, await prefixOutcome(format, generated.lines, index), index + 1, format.file);
              return;
            }
            check(!actual.ok, () => `corrupted line ${index + 1} was accepted`);
            if (!actual.ok) expectErrorAt(actual.error, format.file, index + 1, actual.error instanceof UnsupportedSchemaError ? "unsupported" : "format");
          }),
          { numRuns: RUNS },
        ));
    });
  });
}

afterAll(() => printFuzzLog("pi / Codex / Claude Code"));
