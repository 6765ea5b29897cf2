/**
 * Property-based tests of the Rho readers: generated valid snapshots (schema 1 and 2) and
 * application JSONL sessions, truncated at random byte offsets or with a random line
 * corrupted. The reader never throws an untyped error and never drops a record silently:
 * each result is either exactly what the rules give or a typed error naming file and line.
 */
import fc from "fast-check";
import { afterAll, describe, it } from "vitest";
import type { MessagePart, MessageRecord, PortableSession } from "../../core/mod.ts";
import { readRhoJsonl, readRhoSnapshot, type RhoJsonlReadResult } from "../../core/formats/mod.ts";
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

type Json = Record<string, unknown>;

const ID_A = { provider: "openai", api: "responses", model: "gpt-5" };
const ID_B = { provider: "anthropic", api: "messages", model: "claude" };
const T = "2026-12-02T13:00:00.000Z";
const FALLBACK_KIND = "rho.sdk.portable_fallback.v1";
type Block = { kind?: unknown; position?: unknown; data?: unknown };
const isFallback = (c: Block): boolean => c.kind === FALLBACK_KIND && c.position === undefined && typeof c.data === "string";

interface EntrySpec {
  kind: number;
  texts: string[];
  flags: number[];
  pick: number;
  alt: boolean;
}

const entryArb: fc.Arbitrary<EntrySpec> = fc.record({
  kind: fc.integer({ min: 0, max: 5 }),
  texts: fc.array(textArb, { maxLength: 2 }),
  flags: fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 3 }),
  pick: fc.nat({ max: 255 }),
  alt: fc.boolean(),
});

/** Generates valid history entries from entropy; `open` holds the calls waiting for a result (shared across records). */
function buildEntries(specs: readonly EntrySpec[], open: string[], ids: { next: number }): Json[] {
  return specs.map((s): Json => {
    const text = (i: number): string => s.texts[i] ?? `x${i}`;
    const call = (i: number): Json => {
      const id = `c${ids.next++}`;
      open.push(id);
      return { ToolCall: { id, name: i % 2 ? "run" : "read", arguments: { i, q: text(i) } } };
    };
    const content = (user: boolean): Json[] =>
      s.flags.map((f, i) => {
        if (f <= 2) return { Text: text(i) };
        if (user && f === 3) return { Image: { data: "aGk=", mime_type: "image/png" } };
        return call(i);
      });
    const identity = s.pick & 64 ? ID_B : ID_A;
    const context = Array.from({ length: (s.pick >> 2) & 3 }, (_, k) => ({
      identity,
      kind: k === 0 ? "reasoning" : "opaque",
      ...(s.pick & 16 ? { position: k } : {}),
      data: { k, s: text(0) },
    }));
    switch (s.kind) {
      case 0:
        return { User: content(true) };
      case 1:
        return { Assistant: content(false) };
      case 2:
        return {
          EnrichedAssistant: {
            content: content(false),
            ...(s.alt ? { provenance: identity } : {}),
            ...(s.pick & 1 ? { reasoning_summary: text(1) } : {}),
            // A portable fallback as older writers put it (a field) or as Rho writes it today (the
            // last provider_context block, identity the provenance or three empty strings).
            ...(s.pick & 2 && !(s.pick & 32) ? { portable_fallback: `fb ${text(0)}` } : {}),
            ...(context.length > 0 || s.pick & 2
              ? {
                provider_context: [
                  ...context,
                  ...(s.pick & 2 && s.pick & 32
                    ? [{ identity: s.alt ? identity : { provider: "", api: "", model: "" }, kind: FALLBACK_KIND, data: `fb ${text(0)}` }]
                    : []),
                ],
              }
              : {}),
          },
        };
      case 3:
        return {
          AbortedAssistant: {
            content: content(false),
            reasoning: s.pick & 1 ? "" : `RAW ${text(0)}`,
            ...(s.alt ? { provenance: identity } : {}),
            ...(s.pick & 2 ? { reasoning_summary: text(1) } : {}),
            ...(context.length > 0 ? { provider_context: context } : {}),
            tool_calls: s.pick & 32 ? [{ id: "p1", name: null, arguments: '{"a' }] : [],
            usage: s.pick & 128
              ? {
                input_tokens: 5,
                output_tokens: 6,
                cache_read_tokens: null,
                cache_write_tokens: 2,
                total_tokens: 11,
                context_window: null,
                cost_usd_micros: null,
              }
              : s.pick & 16
              ? { input_tokens: null, output_tokens: 3 }
              : {},
          },
        };
      case 4:
        if (open.length > 0) {
          const [id] = open.splice(s.pick % open.length, 1);
          return { ToolResult: { id, ok: s.alt, content: text(0) } };
        }
        return { User: [{ Text: text(0) }] };
      default:
        return { System: text(0) };
    }
  });
}

/** Rho's `portable_fallback()` of an assistant message as deserialized: the field wins over a block. */
function fallbackOf(m: Json): unknown {
  return m.portable_fallback ?? ((m.provider_context as Json[] | undefined) ?? []).find(isFallback)?.data;
}

/** The model of rhoEntriesToMessages, written independently: what each entry must become. */
function expectedHistory(history: readonly Json[], stamps: readonly string[]): { system?: string; messages: MessageRecord[] } {
  const messages: MessageRecord[] = [];
  const open = new Map<string, Json[]>();
  let system: string | undefined;
  const parts = (blocks: Json[], lead: Json[]): MessagePart[] => {
    const out: Json[] = lead.map((p, i) => ({ sequence: i + 1, ...p }));
    for (const block of blocks) {
      const sequence = out.length + 1;
      if ("Text" in block) out.push({ sequence, type: "text", text: block.Text });
      else if ("Image" in block) {
        const image = block.Image as Json;
        out.push({ sequence, type: "file", media_type: image.mime_type, data: image.data });
      } else {
        const c = block.ToolCall as Json;
        const part: Json = { sequence, type: "tool", tool_call_id: c.id, tool_name: c.name, state: "input-available", input: c.arguments };
        open.set(c.id as string, [...(open.get(c.id as string) ?? []), part]);
        out.push(part);
      }
    }
    return out as MessagePart[];
  };
  const lead = (m: Json): Json[] => [
    ...(m.reasoning_summary !== undefined ? [{ type: "reasoning-summary", text: m.reasoning_summary }] : []),
    ...((m.provider_context as Json[] | undefined) ?? []).filter((c) => !isFallback(c)).map((c) => ({
      type: "provider-context",
      ...(c.identity as Json),
      data: c.data,
      kind: c.kind,
      ...(c.position !== undefined ? { position: c.position } : {}),
    })),
  ];
  history.forEach((entry, i) => {
    const base = { record_type: "message", sequence: messages.length + 1, message_id: `m_rho_${i}`, created_at: stamps[i]! };
    const [kind, body] = Object.entries(entry)[0]!;
    if (kind === "System") {
      if (i === 0) system = body as string;
      else messages.push({ ...base, role: "user", parts: [{ sequence: 1, type: "text", text: body as string }], rho: { entry: "System" } } as MessageRecord);
    } else if (kind === "User") messages.push({ ...base, role: "user", parts: parts(body as Json[], []) } as MessageRecord);
    else if (kind === "Assistant") messages.push({ ...base, role: "assistant", status: "completed", parts: parts(body as Json[], []) } as MessageRecord);
    else if (kind === "EnrichedAssistant") {
      const m = body as Json;
      messages.push({
        ...base,
        role: "assistant",
        status: "completed",
        ...(m.provenance ? { provider: m.provenance } : {}),
        parts: parts(m.content as Json[], lead(m)),
        ...(fallbackOf(m) !== undefined ? { rho: { portable_fallback: fallbackOf(m) } } : {}),
      } as MessageRecord);
    } else if (kind === "AbortedAssistant") {
      const m = body as Json;
      const usage = m.usage as Json;
      const full = typeof usage.input_tokens === "number" && typeof usage.output_tokens === "number";
      const numeric = Object.fromEntries(Object.entries(usage).filter(([, v]) => typeof v === "number"));
      const anyValue = Object.values(usage).some((v) => v !== null && v !== undefined);
      const calls = m.tool_calls as Json[];
      const rho = { ...(calls.length > 0 ? { partial_tool_calls: calls } : {}), ...(!full && anyValue ? { usage } : {}) };
      messages.push({
        ...base,
        role: "assistant",
        status: "stopped",
        ...(m.provenance ? { provider: m.provenance } : {}),
        ...(full ? { usage: numeric } : {}),
        parts: parts(m.content as Json[], lead(m)),
        ...(Object.keys(rho).length > 0 ? { rho } : {}),
      } as MessageRecord);
    } else {
      const r = body as Json;
      const part = open.get(r.id as string)!.pop()!;
      Object.assign(part, r.ok ? { state: "output-available", output: r.content } : { state: "output-error", error: r.content });
    }
  });
  return { ...(system !== undefined ? { system } : {}), messages };
}

// ---------------------------------------------------------------------------
// Snapshots
// ---------------------------------------------------------------------------

interface SnapshotCase {
  doc: Json;
  file: LineFile;
  expected: PortableSession;
}

function snapshotArb(version: 1 | 2): fc.Arbitrary<SnapshotCase> {
  return fc
    .record({
      specs: fc.array(entryArb, { maxLength: 7 }),
      revision: fc.nat({ max: 1000 }),
      compaction: fc.option(
        fc.record({
          completed_compactions: fc.nat(9),
          removed_messages: fc.nat(99),
          removed_tokens: fc.nat(9999),
          last_revision: fc.option(fc.nat(99), { nil: null }),
        }),
        { nil: undefined },
      ),
      metadata: fc.dictionary(fc.constantFrom("title", "host", "k"), textArb, { maxKeys: 2 }),
      key: fc.option(textArb, { nil: undefined }),
      finalNewline: fc.boolean(),
    })
    .map(({ specs, revision, compaction, metadata, key, finalNewline }) => {
      const history = buildEntries(specs, [], { next: 0 });
      const doc: Json = {
        schema_version: version,
        session_id: `fz-${version}`,
        revision,
        history,
        provider: ID_A,
        ...(compaction ? { compaction } : {}),
        ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
        ...(key !== undefined ? { prompt_cache_key: key } : {}),
      };
      const { system, messages } = expectedHistory(history, history.map(() => T));
      const expected: PortableSession = {
        sourceId: `fz-${version}`,
        // Rho keeps a title in metadata (docs/decisions.md): it is also the session's title.
        ...(metadata.title !== undefined ? { title: metadata.title } : {}),
        revision,
        ...(system !== undefined ? { system } : {}),
        messages,
        provider: ID_A,
        ...(compaction
          ? {
            compaction: {
              completed: compaction.completed_compactions,
              removed_messages: compaction.removed_messages,
              removed_tokens_estimate: compaction.removed_tokens,
              ...(compaction.last_revision !== null ? { last_revision: compaction.last_revision } : {}),
            },
          }
          : {}),
        ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
        ...(key !== undefined && version === 2 ? { promptCacheKey: key } : {}),
        format: `rho-snapshot-v${version}`,
      };
      return { doc, file: layoutLines(JSON.stringify(doc, null, 2).split("\n"), finalNewline), expected };
    });
}

const SNAPSHOT_FILE = "snapshot.json";
const readSnapshot = (bytes: Uint8Array): PortableSession => readRhoSnapshot(bytes, SNAPSHOT_FILE, { timestamp: T });
const snapshotGarbage = [
  new TextEncoder().encode("@@ garbage"),
  new TextEncoder().encode("  # not json"),
  new Uint8Array([0x20, 0xff, 0xfe]),
  new Uint8Array([0xc3]),
];

describe.each([1, 2] as const)("fuzz: Rho snapshot schema %i", (version) => {
  const format = `rho snapshot v${version}`;

  it(`generated snapshots read exactly, their bytes unchanged (${EXACT_RUNS} cases)`, () => {
    timed(format, EXACT_RUNS, () =>
      fc.assert(
        fc.property(snapshotArb(version), ({ file, expected }) => {
          const copy = file.bytes.slice();
          same(succeeded(outcome(() => readSnapshot(file.bytes))), expected);
          same(file.bytes, copy);
        }),
        { numRuns: EXACT_RUNS },
      ));
  });

  it(`truncated at any byte: the same session (only trailing whitespace cut) or a located typed error (${RUNS} cases)`, () => {
    const cases = snapshotArb(version).chain((c) => fc.tuple(fc.constant(c), cutArb(c.file)));
    timed(format, RUNS, () =>
      fc.assert(
        fc.property(cases, ([{ file, expected }, cut]) => {
          const bytes = file.bytes.slice(0, cut);
          const result = outcome(() => readSnapshot(bytes));
          const lastContent = file.ends.at(-1)!;
          if (cut >= lastContent) {
            same(succeeded(result), expected); // only trailing whitespace was cut
            return;
          }
          // Cut inside the document: refused, located on the last line the cut left
          // (the line holding offset `cut`, an empty one when the cut follows a newline).
          const lastLine = file.starts.filter((start) => start <= cut).length;
          expectErrorAt(failed(result), SNAPSHOT_FILE, Math.max(1, lastLine));
        }),
        { numRuns: RUNS },
      ));
  });

  it(`a corrupted line is refused with its exact line number (${RUNS} cases)`, () => {
    const cases = snapshotArb(version).chain((c) =>
      fc.tuple(fc.constant(c), fc.nat({ max: c.file.starts.length - 1 }), fc.nat({ max: snapshotGarbage.length - 1 }))
    );
    timed(format, RUNS, () =>
      fc.assert(
        fc.property(cases, ([{ file }, index, kind]) => {
          const bytes = replaceLine(file, index, snapshotGarbage[kind]!);
          const copy = bytes.slice();
          expectErrorAt(failed(outcome(() => readSnapshot(bytes))), SNAPSHOT_FILE, index + 1);
          same(bytes, copy);
        }),
        { numRuns: RUNS },
      ));
  });
});

// ---------------------------------------------------------------------------
// Application JSONL
// ---------------------------------------------------------------------------

interface OpSpec {
  op: number;
  entries: EntrySpec[];
  schema: 1 | 2;
  n: number;
}

const opArb: fc.Arbitrary<OpSpec> = fc.record({
  op: fc.integer({ min: 0, max: 3 }),
  entries: fc.array(entryArb, { maxLength: 3 }),
  schema: fc.constantFrom(1 as const, 2 as const),
  n: fc.nat({ max: 3 }),
});

/** The model state after each record: history, per-entry times, revision and snapshot fields. */
interface Model {
  history: Json[];
  stamps: string[];
  revision: number;
  provider?: Json;
  compaction?: Json;
  metadata: Record<string, string>;
  key?: string;
  updated: string;
}

const JSONL_FILE = "session.jsonl";
const secondsIso = (s: number): string => new Date(s * 1000).toISOString();

/** Generates records and, for every prefix, the model state after it (index 0: after the header). */
function jsonlArb(): fc.Arbitrary<{ file: LineFile; models: Model[]; records: Json[]; version: number }> {
  return fc.tuple(fc.array(opArb, { maxLength: 5 }), fc.integer({ min: 1, max: 3 }), fc.boolean()).map(([ops, version, finalNewline]) => {
    const records: Json[] = [{ type: "session", version, id: "fz-j", timestamp: "1000", cwd: "/w" }];
    // `model` is the state every record folds into; `models` holds what a reader resumes
    // after each record: Rho makes a node only for a record that changes the revision, the
    // history or the compaction (tree.rs), so after a delta that changes none of them the
    // resumed state stays the previous node's (its time and provider too).
    let model: Model = { history: [], stamps: [], revision: 0, metadata: {}, updated: secondsIso(1000) };
    const models: Model[] = [model];
    let resumed = model;
    let open: string[] = [];
    const ids = { next: 0 };
    let snapshotSeen = false;
    ops.forEach((spec, k) => {
      const seconds = 1001 + k;
      const timestamp = String(seconds);
      const at = secondsIso(seconds);
      const carried = (history: Json[]): string[] => {
        let same = true;
        return history.map((entry, i) => {
          same = same && i < model.history.length && JSON.stringify(model.history[i]) === JSON.stringify(entry);
          return same ? model.stamps[i]! : at;
        });
      };
      const op = spec.op === 1 && !snapshotSeen ? 2 : spec.op;
      if (op === 0) {
        // A base keeps the current history as its prefix or starts afresh.
        const keep = spec.n % 2 === 0 ? model.history : [];
        const fresh = keep.length === 0 ? [] : [...open];
        const history = [...keep, ...buildEntries(spec.entries, fresh, ids)];
        open = fresh;
        const revision = model.revision + 1;
        const compaction = { completed_compactions: spec.n, removed_messages: 2 * spec.n };
        const metadata: Record<string, string> = spec.n === 3 ? { title: "t" } : {};
        const key = spec.schema === 2 && spec.n > 0 ? `key-${spec.n}` : undefined;
        const snapshot = {
          schema_version: spec.schema,
          session_id: "fz-j",
          revision,
          history,
          provider: ID_B,
          compaction,
          metadata,
          ...(key !== undefined ? { prompt_cache_key: key } : {}),
        };
        records.push({ type: "snapshot", timestamp, snapshot, display_messages: history.slice(0, 1).map((message) => ({ timestamp, message })) });
        model = {
          history,
          stamps: carried(history),
          revision,
          provider: ID_B,
          compaction: { completed: spec.n, removed_messages: 2 * spec.n, removed_tokens_estimate: 0 },
          metadata,
          ...(key !== undefined ? { key } : {}),
          updated: at,
        };
        snapshotSeen = true;
      } else if (op === 1) {
        const appended = buildEntries(spec.entries, open, ids);
        const revision = model.revision + spec.n;
        const compaction = { completed_compactions: 1, removed_messages: spec.n };
        const metadata = { host: `h${spec.n}` };
        records.push({
          type: "snapshot_delta",
          timestamp,
          delta: {
            base_revision: model.revision,
            session_id: "fz-j",
            revision,
            appended_history: appended,
            provider: ID_A,
            compaction,
            metadata,
            ...(spec.n > 1 ? { prompt_cache_key: "dk" } : {}),
          },
          display_messages: [],
        });
        const { key: _drop, ...rest } = model;
        const compactionAfter = { completed: 1, removed_messages: spec.n, removed_tokens_estimate: 0 };
        const unchanged = appended.length === 0 && revision === model.revision && JSON.stringify(model.compaction) === JSON.stringify(compactionAfter);
        model = {
          ...rest,
          history: [...model.history, ...appended],
          stamps: [...model.stamps, ...appended.map(() => at)],
          revision,
          provider: ID_A,
          compaction: compactionAfter,
          metadata,
          ...(spec.n > 1 ? { key: "dk" } : {}),
          updated: at,
        };
        if (unchanged) {
          models.push(resumed);
          return;
        }
      } else if (op === 2) {
        const [entry] = buildEntries(
          spec.entries.length > 0 ? spec.entries.slice(0, 1) : [{ kind: 0, texts: ["m"], flags: [0], pick: 0, alt: false }],
          open,
          ids,
        );
        records.push({ type: "message", timestamp, message: entry, ...(spec.n === 1 ? { display_message: { User: [{ Text: "/shown" }] } } : {}) });
        model = { ...model, history: [...model.history, entry!], stamps: [...model.stamps, at], revision: model.revision + 1, updated: at };
      } else {
        open = [];
        const history = buildEntries(spec.entries, open, ids);
        const revision = model.revision + 1;
        const previous = (model.compaction as { completed: number; removed_messages: number } | undefined) ??
          { completed: 0, removed_messages: 0, removed_tokens_estimate: 0 };
        records.push({ type: "replace_history", timestamp, messages: history });
        model = {
          ...model,
          history,
          stamps: carried(history),
          revision,
          compaction: {
            ...previous,
            completed: previous.completed + 1,
            removed_messages: previous.removed_messages + Math.max(0, model.history.length - history.length),
            last_revision: revision,
          },
          updated: at,
        };
      }
      resumed = model;
      models.push(model);
    });
    return { file: layoutLines(records.map((r) => JSON.stringify(r)), finalNewline), models, records, version };
  });
}

function expectJsonl(result: RhoJsonlReadResult, model: Model, version: number, tornLine: number | null): void {
  const { system, messages } = expectedHistory(model.history, model.stamps);
  const expected: PortableSession = {
    sourceId: "fz-j",
    ...(model.metadata.title !== undefined ? { title: model.metadata.title } : {}),
    createdAt: secondsIso(1000),
    updatedAt: model.updated,
    cwd: "/w",
    revision: model.revision,
    ...(system !== undefined ? { system } : {}),
    messages,
    ...(model.provider ? { provider: model.provider as PortableSession["provider"] } : {}),
    ...(model.compaction ? { compaction: model.compaction as PortableSession["compaction"] } : {}),
    ...(Object.keys(model.metadata).length > 0 ? { metadata: model.metadata } : {}),
    ...(model.key !== undefined ? { promptCacheKey: model.key } : {}),
    format: `rho-jsonl-v${version}`,
  };
  same(result.session, expected);
  same(
    result.diagnostics.map((d) => [d.code, d.line, d.file, d.fatal]),
    tornLine === null ? [] : [["truncated_tail", tornLine, JSONL_FILE, false]],
  );
}

const readJsonl = (bytes: Uint8Array): RhoJsonlReadResult => readRhoJsonl(bytes, JSONL_FILE);

describe("fuzz: Rho app JSONL", () => {
  it(`generated sessions read exactly, their bytes unchanged (${EXACT_RUNS} cases)`, () => {
    timed("rho jsonl", EXACT_RUNS, () =>
      fc.assert(
        fc.property(jsonlArb(), ({ file, models, version }) => {
          const copy = file.bytes.slice();
          expectJsonl(succeeded(outcome(() => readJsonl(file.bytes))), models.at(-1)!, version, null);
          same(file.bytes, copy);
        }),
        { numRuns: EXACT_RUNS },
      ));
  });

  it(`truncated at any byte: exact recovery by the rules or a located typed error (${RUNS} cases)`, () => {
    const cases = jsonlArb().chain((g) => fc.tuple(fc.constant(g), cutArb(g.file)));
    timed("rho jsonl", RUNS, () =>
      fc.assert(
        fc.property(cases, ([{ file, models, version }, cut]) => {
          const { kept, tornLine } = truncationOutcome(file, cut);
          const result = outcome(() => readJsonl(file.bytes.slice(0, cut)));
          if (kept === 0) expectErrorAt(failed(result), JSONL_FILE, 1);
          else expectJsonl(succeeded(result), models[kept - 1]!, version, tornLine);
        }),
        { numRuns: RUNS },
      ));
  });

  it(`a corrupted line (syntax, shape, wrong base revision, orphan result, unknown version): refused at its line, or ignored as a torn tail (${RUNS} cases)`, () => {
    const enc = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));
    const semantic = [
      enc({ type: "node", id: "n1" }),
      enc({ type: "message", timestamp: "5", message: { ToolResult: { id: "zz-none", ok: true, content: "" } } }),
      enc({ type: "message", timestamp: "5", message: { Video: [] } }),
      enc({ type: "snapshot_delta", timestamp: "5", delta: {}, display_messages: [] }),
    ];
    const unsupportedHeader = enc({ type: "session", version: 9, id: "x", timestamp: "1", cwd: "/" });
    const unsupportedSnapshot = enc({ type: "snapshot", timestamp: "1", snapshot: { schema_version: 7 }, display_messages: [] });
    const KINDS = garbageLines.length + semantic.length + 3;
    const cases = jsonlArb().chain((g) => fc.tuple(fc.constant(g), fc.nat({ max: g.file.starts.length - 1 }), fc.nat({ max: KINDS - 1 })));
    timed("rho jsonl", RUNS, () =>
      fc.assert(
        fc.property(cases, ([{ file, records, models, version }, index, kind]) => {
          let payload: Uint8Array;
          let unsupported = false;
          if (kind < garbageLines.length) payload = garbageLines[kind]!;
          else if (kind < garbageLines.length + semantic.length) payload = semantic[kind - garbageLines.length]!;
          else if (kind === KINDS - 3) {
            // The record with its base revision off by one (a delta), else an orphan result.
            const record = records[index]!;
            payload = record.type === "snapshot_delta"
              ? enc({ ...record, delta: { ...(record.delta as Json), base_revision: ((record.delta as Json).base_revision as number) + 1 } })
              : semantic[1]!;
          } else {
            payload = index === 0 ? unsupportedHeader : unsupportedSnapshot;
            unsupported = true;
          }
          const bytes = replaceLine(file, index, payload);
          const copy = bytes.slice();
          const result = outcome(() => readJsonl(bytes));
          same(bytes, copy);
          if (isUnterminatedLast(file, index) && !unsupported) {
            if (index === 0) expectErrorAt(failed(result), JSONL_FILE, 1);
            else expectJsonl(succeeded(result), models[index - 1]!, version, index + 1);
            return;
          }
          expectErrorAt(failed(result), JSONL_FILE, index + 1, unsupported ? "unsupported" : "format");
        }),
        { numRuns: RUNS },
      ));
  });

  it("the generator is not trivial: it produces every record type and every history entry type", () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(jsonlArb(), ({ records }) => {
        for (const r of records) {
          seen.add(r.type as string);
          const history = (r.snapshot as Json | undefined)?.history ?? (r.delta as Json | undefined)?.appended_history ?? r.messages ??
            (r.message ? [r.message] : []);
          for (const e of history as Json[]) seen.add(Object.keys(e)[0]!);
        }
      }),
      { numRuns: 300, seed: 42 },
    );
    check(
      [
        "session",
        "snapshot",
        "snapshot_delta",
        "message",
        "replace_history",
        "System",
        "User",
        "Assistant",
        "EnrichedAssistant",
        "AbortedAssistant",
        "ToolResult",
      ].every((t) => seen.has(t)),
      () => `missing: ${[...seen].join(", ")}`,
    );
  });
});

afterAll(() => printFuzzLog("Rho"));
