/**
 * Property-based tests of the DeepCode readers, for each layout (v1, core-v0, desktop-v0):
 * generated valid sessions, truncated at random byte offsets or with a random line
 * corrupted. The reader never throws an untyped error and never drops a record silently:
 * each result is either the exact recovery the rules give (a torn final line ignored and
 * reported, the records before it read exactly) or a typed error naming file and line.
 */
import fc from "fast-check";
import { afterAll, describe, it } from "vitest";
import type { MessagePart, MessageRecord } from "../../core/mod.ts";
import { type DeepCodeLayout, type DeepCodeReadResult, readDeepCode } from "../../core/formats/mod.ts";
import {
  check,
  cutArb,
  EXACT_RUNS,
  expectErrorAt,
  failed,
  garbageLines,
  isUnterminatedLast,
  layoutLines,
  type LineFile,
  outcome,
  printFuzzLog,
  replaceLine,
  RUNS,
  same,
  succeeded,
  textArb,
  timed,
  truncationOutcome,
} from "./fuzz-support.ts";

type Block =
  | { type: "text"; text: string }
  | { type: "thinking"; text: string }
  | { type: "tool_use"; id: string; name: string; input: unknown }
  | { type: "tool_result"; tool_use_id: string; content: unknown; is_error?: boolean };

/** One generated message record, layout-neutral; `stamp` is Unix seconds. */
interface Rec {
  role: "user" | "assistant" | "tool";
  content: Block[] | string;
  stamp: number | null;
}

interface Turn {
  kind: number;
  texts: string[];
  flags: number[];
  pick: number;
  stamp: number | null;
  alt: boolean;
}

const turnArb: fc.Arbitrary<Turn> = fc.record({
  kind: fc.integer({ min: 0, max: 3 }),
  texts: fc.array(textArb, { maxLength: 2 }),
  flags: fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 3 }),
  pick: fc.nat({ max: 255 }),
  stamp: fc.option(fc.integer({ min: 1_600_000_000, max: 1_900_000_000 }), { nil: null }),
  alt: fc.boolean(),
});

/** Builds valid records from entropy: every tool_result answers an open tool_use. */
function buildRecords(turns: readonly Turn[]): Rec[] {
  const open: string[] = [];
  let next = 0;
  return turns.map((t): Rec => {
    const text = (i: number): string => t.texts[i] ?? `t${i}`;
    if (t.kind === 2 && open.length > 0) {
      let chosen = open.filter((_, i) => (t.pick >> i) & 1);
      if (chosen.length === 0) chosen = [open.at(-1)!];
      for (const id of chosen) open.splice(open.indexOf(id), 1);
      if (t.pick & 0x80) chosen.reverse();
      const content: Block[] = chosen.map((id, i) => ({
        type: "tool_result",
        tool_use_id: id,
        content: i % 2 === 1 ? { out: text(0), n: i } : text(0),
        ...(t.flags[i] === 5 ? { is_error: true } : {}),
      }));
      const role = t.alt ? "tool" : "user";
      if (role === "user" && t.texts.length > 1) content.push({ type: "text", text: text(1) });
      return { role, content, stamp: t.stamp };
    }
    if (t.kind === 1) {
      const content = t.flags.map((f, i): Block => {
        if (f <= 1) return { type: "text", text: text(i) };
        if (f === 2) return { type: "thinking", text: text(i) };
        const id = `tu_${next++}`;
        open.push(id);
        return { type: "tool_use", id, name: f === 3 ? "read" : "run", input: f === 4 ? { q: text(i) } : [i, null] };
      });
      return { role: "assistant", content, stamp: t.stamp };
    }
    if (t.kind === 3) {
      return t.alt ? { role: "user", content: [], stamp: t.stamp } : { role: "assistant", content: [{ type: "thinking", text: text(0) }], stamp: t.stamp };
    }
    if (t.alt && t.texts.length === 1) return { role: "user", content: text(0), stamp: t.stamp };
    return { role: "user", content: t.texts.map((s) => ({ type: "text", text: s })), stamp: t.stamp };
  });
}

const iso = (seconds: number): string => new Date(seconds * 1000).toISOString();
const CREATED = 1_700_000_000;
const META = { id: "fz", cwd: "/fuzz", createdAt: iso(CREATED), updatedAt: iso(CREATED + 60) };

/** The file as a layout writes it: line strings, and the first message's line number. */
function encode(layout: DeepCodeLayout, records: readonly Rec[]): { lines: string[]; firstLine: number } {
  const stamp = (r: Rec): Record<string, unknown> => (r.stamp === null ? {} : { timestamp: layout === "desktop-v0" ? r.stamp : iso(r.stamp) });
  switch (layout) {
    case "v1":
      return {
        lines: [
          JSON.stringify({ type: "session_meta", schema_version: 1, id: META.id, cwd: META.cwd, created_at: META.createdAt, updated_at: META.updatedAt }),
          ...records.map((r) => JSON.stringify({ type: "message", schema_version: 1, role: r.role, content: r.content, ...stamp(r) })),
        ],
        firstLine: 2,
      };
    case "desktop-v0":
      return {
        lines: [
          JSON.stringify({ type: "session_meta", id: META.id, cwd: META.cwd, created_at: CREATED, updated_at: CREATED + 60 }),
          ...records.map((r) => JSON.stringify({ type: "message", role: r.role, content: r.content, ...stamp(r) })),
        ],
        firstLine: 2,
      };
    case "core-v0":
      return { lines: records.map((r) => JSON.stringify({ role: r.role, content: r.content, ...stamp(r) })), firstLine: 1 };
  }
}

const metaBytes = new TextEncoder().encode(JSON.stringify(META, null, 2));

/** The model: what the reading rules make of the first `count` records (independent of the reader). */
function expectedMessages(records: readonly Rec[], firstLine: number): MessageRecord[] {
  const messages: MessageRecord[] = [];
  const open = new Map<string, Record<string, unknown>[]>();
  let last = META.createdAt;
  records.forEach((r, i) => {
    const blocks: Block[] = typeof r.content === "string" ? [{ type: "text", text: r.content }] : r.content;
    for (const b of blocks) {
      if (b.type !== "tool_result") continue;
      const part = open.get(b.tool_use_id)!.pop()!;
      // The time of the record holding the result is kept on the part (so an export gives it back).
      if (r.stamp !== null) part.deepcode = { result_timestamp: iso(r.stamp) };
      if (b.is_error) Object.assign(part, { state: "output-error", error: typeof b.content === "string" ? b.content : JSON.stringify(b.content) });
      else Object.assign(part, { state: "output-available", output: b.content });
    }
    const created = r.stamp === null ? last : iso(r.stamp);
    last = created;
    const kept = blocks.filter((b) => b.type !== "tool_result");
    if (r.role === "tool" || (kept.length === 0 && blocks.length > 0)) return;
    const parts = kept.map((b, k): MessagePart => {
      if (b.type === "text") return { sequence: k + 1, type: "text", text: b.text };
      if (b.type === "thinking") return { sequence: k + 1, type: "reasoning", text: b.text };
      const part = {
        sequence: k + 1,
        type: "tool" as const,
        tool_call_id: b.type === "tool_use" ? b.id : "",
        tool_name: b.type === "tool_use" ? b.name : "",
        state: "input-available" as const,
        input: b.type === "tool_use" ? b.input : null,
      };
      const list = open.get(part.tool_call_id) ?? [];
      list.push(part);
      open.set(part.tool_call_id, list);
      return part;
    });
    messages.push({
      record_type: "message",
      sequence: messages.length + 1,
      message_id: `m_deepcode_${firstLine + i}`,
      role: r.role as "user" | "assistant",
      created_at: created,
      ...(r.role === "assistant" ? { status: "completed" as const } : {}),
      parts,
    });
  });
  return messages;
}

const FILES: Record<DeepCodeLayout, string> = { v1: "fz.v1.jsonl", "core-v0": "fz.jsonl", "desktop-v0": "fz.jsonl" };

function read(layout: DeepCodeLayout, bytes: Uint8Array): DeepCodeReadResult {
  return readDeepCode({ file: FILES[layout], bytes, ...(layout === "core-v0" ? { metaBytes } : {}) });
}

function generated(layout: DeepCodeLayout): fc.Arbitrary<{ records: Rec[]; file: LineFile; firstLine: number }> {
  return fc.tuple(fc.array(turnArb, { maxLength: 6 }), fc.boolean()).map(([turns, finalNewline]) => {
    const records = buildRecords(turns);
    const { lines, firstLine } = encode(layout, records);
    return { records, file: layoutLines(lines, finalNewline), firstLine };
  });
}

/** Asserts the result is exactly what the first `kept` lines give, with a truncated_tail at `tornLine`. */
function expectRecovery(
  layout: DeepCodeLayout,
  result: DeepCodeReadResult,
  records: readonly Rec[],
  firstLine: number,
  kept: number,
  tornLine: number | null,
): void {
  const messageRecords = records.slice(0, kept - (firstLine - 1));
  const { session } = result;
  check(
    result.layout === layout && session.sourceId === META.id && session.cwd === META.cwd && session.createdAt === META.createdAt,
    () => `metadata: ${JSON.stringify(session)}`,
  );
  same(session.messages, expectedMessages(messageRecords, firstLine));
  same(
    result.diagnostics.map((d) => [d.code, d.line, d.file, d.fatal]),
    tornLine === null ? [] : [["truncated_tail", tornLine, FILES[layout], false]],
  );
}

/** The corrupt lines a layout can meet: syntax garbage, wrong shapes, and semantic errors in its own dialect. */
function corruptions(layout: DeepCodeLayout): { bytes: Uint8Array; unsupported: boolean }[] {
  const enc = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));
  const orphan = [{ type: "tool_result", tool_use_id: "zz-none", content: "" }];
  const envelope = (record: Record<string, unknown>): Record<string, unknown> =>
    layout === "v1" ? { type: "message", schema_version: 1, ...record } : layout === "desktop-v0" ? { type: "message", ...record } : record;
  return [
    ...garbageLines.map((bytes) => ({ bytes, unsupported: false })),
    { bytes: enc(envelope({ role: "user", content: orphan })), unsupported: false },
    { bytes: enc(envelope({ role: "assistant", content: orphan })), unsupported: false },
    { bytes: enc(envelope({ role: "narrator", content: [] })), unsupported: false },
    { bytes: enc(envelope({ role: "user", content: [{ type: "image", url: "x" }] })), unsupported: false },
    ...(layout === "v1" ? [{ bytes: enc({ type: "message", schema_version: 2, role: "user", content: [] }), unsupported: true }] : []),
    ...(layout === "desktop-v0" ? [{ bytes: enc({ type: "message", schema_version: 1, role: "user", content: [] }), unsupported: false }] : []),
  ];
}

const LAYOUTS: DeepCodeLayout[] = ["v1", "core-v0", "desktop-v0"];

describe.each(LAYOUTS)("fuzz: DeepCode %s", (layout) => {
  it(`generated sessions read exactly, their bytes unchanged (${EXACT_RUNS} cases)`, () => {
    timed(`deepcode ${layout}`, EXACT_RUNS, () =>
      fc.assert(
        fc.property(generated(layout), ({ records, file, firstLine }) => {
          const whole = file.bytes.slice();
          expectRecovery(layout, read(layout, file.bytes), records, firstLine, file.ends.length, null);
          same(file.bytes, whole);
        }),
        { numRuns: EXACT_RUNS },
      ));
  });

  it(`truncated at any byte: exact recovery by the rules or a located typed error (${RUNS} cases)`, () => {
    const cases = generated(layout).chain((g) => fc.tuple(fc.constant(g), cutArb(g.file)));
    timed(`deepcode ${layout}`, RUNS, () =>
      fc.assert(
        fc.property(cases, ([{ records, file, firstLine }, cut]) => {
          const bytes = file.bytes.slice(0, cut);
          const { kept, tornLine } = truncationOutcome(file, cut);
          const result = outcome(() => read(layout, bytes));
          if (layout !== "core-v0" && kept === 0) expectErrorAt(failed(result), FILES[layout], 1);
          else expectRecovery(layout, succeeded(result), records, firstLine, kept, tornLine);
        }),
        { numRuns: RUNS },
      ));
  });

  it(`a corrupted line: refused with its line number, or, as an unterminated final line, ignored exactly (${RUNS} cases)`, () => {
    const kinds = corruptions(layout);
    const cases = generated(layout)
      .filter((g) => g.file.starts.length > 0)
      .chain((g) => fc.tuple(fc.constant(g), fc.nat({ max: g.file.starts.length - 1 }), fc.nat({ max: kinds.length - 1 })));
    timed(`deepcode ${layout}`, RUNS, () =>
      fc.assert(
        fc.property(cases, ([{ records, file, firstLine }, index, kind]) => {
          const { bytes: payload, unsupported } = kinds[kind]!;
          const bytes = replaceLine(file, index, payload);
          const copy = bytes.slice();
          const result = outcome(() => read(layout, bytes));
          same(bytes, copy);
          const line = index + 1;
          const headerLine = layout !== "core-v0" && index === 0;
          if (isUnterminatedLast(file, index) && !(unsupported && !headerLine)) {
            // An interrupted append: ignored, reported, the records before it exactly
            // (with nothing before it but a torn header, there is no session: refused at line 1).
            if (headerLine) expectErrorAt(failed(result), FILES[layout], 1);
            else expectRecovery(layout, succeeded(result), records, firstLine, index, line);
            return;
          }
          expectErrorAt(failed(result), FILES[layout], line, unsupported && !headerLine ? "unsupported" : "format");
        }),
        { numRuns: RUNS },
      ));
  });
});

afterAll(() => printFuzzLog("DeepCode"));
