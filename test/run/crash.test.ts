/**
 * Crash points of run() commits: every mutating operation of several runs (draft writes
 * included, made deterministic with `draftFlush: { intervalMs: 0 }`), and torn prefixes
 * of every append. After each crash the "next process" unlocks (the user's
 * `unlock --force`), reopens and checks: no fatal diagnostic; the messages committed
 * before the run intact exactly once; the run's messages all committed, or absent with
 * at most a recoverable draft whose finishDraft() commits the user message and partial
 * work; never a duplicate; and the session accepts the next write.
 */
import { describe, expect, it } from "vitest";
import { MemoryStorage, type MessageRecord, type SessionOptions, type StoragePort, type Tool } from "../../core/mod.ts";
import { FaultyStorage, type MutatingOperation, ScriptedProvider, type ScriptedStep, ScriptedSummarizer, SimulatedCrashError } from "../../testing/mod.ts";
import { expectContiguous, fullHistory, millisecondClock, P, REF, registry } from "../support/session.ts";
import { forceUnlock, textOf } from "./support.ts";

/** What a message looks like for these checks: role, status, text and tool states. */
function signature(message: MessageRecord): string {
  const tools = message.parts.flatMap((p) => (p.type === "tool" ? [p.state] : []));
  return `${message.role}|${message.status ?? ""}|${textOf(message)}|${tools.join(",")}`;
}

interface Scenario {
  readonly name: string;
  readonly options: SessionOptions;
  /** Writes the state before the process starts (on the fresh disk). */
  prepare(storage: StoragePort): Promise<void>;
  /** The process: open and run. */
  process(storage: StoragePort): Promise<void>;
  /** Signatures of the messages committed before the run (and by any recovery the run does first). */
  readonly before: readonly string[];
  /** Messages a recovered draft left by an earlier crash commits first (their own commit). */
  readonly recovered?: readonly string[];
  /** Signatures of the run's messages when its commit completed. */
  readonly run: readonly string[];
  /** Texts the steps stream (for checking partial work). */
  readonly stepTexts: readonly string[];
  /** The run's commit is a cancellation (stopped last message). */
  readonly cancelled?: boolean;
}

const RUN_USER = "RUN-USER: please read a.txt and b.txt";
const STEP1 = "Step one: I will call the tools now.";
const STEP2 = "Final answer: the files say forty-two.";

const tools: Tool[] = [{ name: "read", execute: (input) => ({ content: `contents of ${(input as { path: string }).path}` }) }];

function twoSteps(extra: Partial<ScriptedStep> = {}): ScriptedStep[] {
  return [
    {
      reasoning: "think about which files",
      text: STEP1,
      toolCalls: [
        { id: "c1", name: "read", input: { path: "a.txt" } },
        { id: "c2", name: "read", input: { path: "b.txt" } },
      ],
      usage: { input_tokens: 100, output_tokens: 20 },
    },
    { text: STEP2, usage: { input_tokens: 200, output_tokens: 10 }, ...extra },
  ];
}

const PRE = [
  { role: "user" as const, parts: [{ type: "text" as const, text: "PRE-1 earlier question" }] },
  { role: "assistant" as const, parts: [{ type: "text" as const, text: "PRE-2 earlier answer" }] },
];
const PRE_SIGS = ["user||PRE-1 earlier question|", "assistant|completed|PRE-2 earlier answer|"];
const FULL_RUN = [`user||${RUN_USER}|`, `assistant|completed|${STEP1}|output-available,output-available`, `assistant|completed|${STEP2}|`];

async function createWith(storage: StoragePort, options: SessionOptions, messages: typeof PRE): Promise<void> {
  const sessions = registry(storage, options, millisecondClock());
  const session = await sessions.create(REF, options);
  await session.append(messages);
}

const FLUSH: SessionOptions = { draftFlush: { intervalMs: 0 } };

const scenarios: Scenario[] = [
  {
    name: "a 2-step tool run",
    options: FLUSH,
    prepare: (storage) => createWith(storage, FLUSH, PRE),
    async process(storage) {
      const session = await registry(storage, FLUSH, millisecondClock()).open(REF, FLUSH);
      await session.run(RUN_USER, { provider: new ScriptedProvider(twoSteps(), { chunkSize: 3 }), tools }).result;
    },
    before: PRE_SIGS,
    run: FULL_RUN,
    stepTexts: [STEP1, STEP2],
  },
  {
    name: "a 2-step tool run with an automatic compaction before step 2",
    options: { ...FLUSH, contextWindow: 1000, summarizer: new ScriptedSummarizer() },
    prepare: (storage) =>
      createWith(storage, FLUSH, [...PRE, ...PRE.map((m) => ({ ...m, parts: [{ type: "text" as const, text: `${m.parts[0]!.text} again` }] }))]),
    async process(storage) {
      const options = { ...FLUSH, contextWindow: 1000, summarizer: new ScriptedSummarizer() };
      const session = await registry(storage, options, millisecondClock()).open(REF, options);
      const steps = twoSteps();
      steps[0] = { ...steps[0]!, usage: { input_tokens: 900, output_tokens: 60 } };
      await session.run(RUN_USER, { provider: new ScriptedProvider(steps, { chunkSize: 4 }), tools }).result;
    },
    before: [...PRE_SIGS, "user||PRE-1 earlier question again|", "assistant|completed|PRE-2 earlier answer again|"],
    run: FULL_RUN,
    stepTexts: [STEP1, STEP2],
  },
  {
    name: "a run that first commits a recovered draft",
    options: FLUSH,
    async prepare(storage) {
      await createWith(storage, FLUSH, PRE);
      const draft = {
        record_type: "message",
        sequence: 4,
        message_id: "m_recovered_draft",
        role: "assistant",
        created_at: "2026-12-02T13:00:00.000Z",
        status: "streaming",
        parts: [{ sequence: 1, type: "text", text: "DRAFT-PARTIAL half an answ" }],
        provider: { provider: "scripted", api: "test", model: "scripted-1" },
        pending_messages: [
          {
            record_type: "message",
            sequence: 3,
            message_id: "m_recovered_user",
            role: "user",
            created_at: "2026-12-02T13:00:00.000Z",
            parts: [{ sequence: 1, type: "text", text: "DRAFT-USER" }],
          },
        ],
      };
      await storage.replace(P.draft, new TextEncoder().encode(`${JSON.stringify(draft)}\n`));
    },
    async process(storage) {
      const session = await registry(storage, FLUSH, millisecondClock()).open(REF, FLUSH);
      await session.run(RUN_USER, { provider: new ScriptedProvider(twoSteps(), { chunkSize: 5 }), tools }).result;
    },
    before: PRE_SIGS,
    recovered: ["user||DRAFT-USER|", "assistant|stopped|DRAFT-PARTIAL half an answ|"],
    run: FULL_RUN,
    stepTexts: [STEP1, STEP2],
  },
  {
    name: "a run cancelled in its second step",
    options: FLUSH,
    prepare: (storage) => createWith(storage, FLUSH, PRE),
    async process(storage) {
      const session = await registry(storage, FLUSH, millisecondClock()).open(REF, FLUSH);
      const controller = new AbortController();
      let deltas = 0;
      let step = 0;
      const run = session.run(RUN_USER, {
        provider: new ScriptedProvider(twoSteps({ hangAfterEvents: 100 }), { chunkSize: 3 }),
        tools,
        signal: controller.signal,
        onEvent: (e) => {
          if (e.type === "step-started") step = e.step;
          if (step === 2 && e.type === "text-delta" && ++deltas === 5) controller.abort();
        },
      });
      await run.result.catch((error: unknown) => {
        if ((error as { code?: string }).code !== "cancelled") throw error;
      });
    },
    before: PRE_SIGS,
    run: [FULL_RUN[0]!, FULL_RUN[1]!, `assistant|stopped|${STEP2.slice(0, 15)}|`],
    stepTexts: [STEP1, STEP2],
    cancelled: true,
  },
];

/** Runs `scenario.process` on a fresh disk crashing at operation `k`; returns the disk and what happened. */
async function crashAt(scenario: Scenario, k: number, tornBytes = 0) {
  const inner = new MemoryStorage();
  await scenario.prepare(inner);
  const faulty = new FaultyStorage(inner, { crashAt: k, tornBytes });
  let error: unknown;
  try {
    await scenario.process(faulty);
  } catch (thrown) {
    error = thrown;
  }
  const disk = await faulty.revive();
  return { disk, error, crash: faulty.crash };
}

/** The mutating operations of an uncrashed process. */
async function operations(scenario: Scenario): Promise<readonly MutatingOperation[]> {
  const inner = new MemoryStorage();
  await scenario.prepare(inner);
  const faulty = new FaultyStorage(inner);
  await scenario.process(faulty);
  await faulty.revive();
  return faulty.log;
}

/** The checks of the next process. Returns which outcome it found. */
async function verify(scenario: Scenario, disk: StoragePort, where: string): Promise<"committed" | "draft" | "absent"> {
  await forceUnlock(disk);
  const sessions = registry(disk, scenario.options, millisecondClock(Date.parse("2026-12-03T00:00:00.000Z")));
  const session = await sessions.open(REF, scenario.options);
  expect(session.diagnostics.filter((d) => d.fatal), `${where}: fatal diagnostics`).toEqual([]);
  expect(session.revision, `${where}: revision never goes backwards`).toBeGreaterThanOrEqual(1);

  let history = await fullHistory(session);
  expectContiguous(history);
  let sigs = history.map(signature);
  expect(sigs.slice(0, scenario.before.length), `${where}: messages before the run`).toEqual(scenario.before);
  let rest = sigs.slice(scenario.before.length);

  // A recovered draft of an earlier crash: committed exactly once, or still a live draft.
  if (scenario.recovered) {
    if (rest.length === 0) {
      expect(session.draft, `${where}: the earlier draft is still recoverable`).toBeDefined();
      expect(session.draft!.pending.map((m) => textOf(m))).toEqual(["DRAFT-USER"]);
      await session.finishDraft();
      history = await fullHistory(session);
      sigs = history.map(signature);
      rest = sigs.slice(scenario.before.length);
      expect(rest, `${where}: the finished earlier draft`).toEqual(scenario.recovered);
      return "draft";
    }
    expect(rest.slice(0, 2), `${where}: the earlier draft's commit`).toEqual(scenario.recovered);
    rest = rest.slice(2);
  }

  let outcome: "committed" | "draft" | "absent";
  if (rest.length > 0) {
    expect(rest, `${where}: the run's commit is all or nothing`).toEqual(scenario.run);
    expect(session.draft, `${where}: no live draft next to a committed run`).toBeUndefined();
    outcome = "committed";
  } else if (session.draft) {
    const pending = session.draft.pending;
    expect(pending.length, `${where}: the draft holds the run's user message`).toBeGreaterThanOrEqual(1);
    const result = await session.finishDraft();
    expect(result, `${where}: finishDraft commits`).toBeDefined();
    history = await fullHistory(session);
    expectContiguous(history);
    const finished = history.map(signature).slice(scenario.before.length + (scenario.recovered?.length ?? 0));
    expect(finished[0], `${where}: the user message first, once`).toBe(scenario.run[0]);
    // Then completed steps exactly as the run made them, then at most one stopped step with partial output.
    let i = 1;
    for (; i < finished.length && finished[i]!.includes("|completed|"); i++) expect(finished[i], `${where}: completed step ${i}`).toBe(FULL_RUN[i]);
    const tail = finished.slice(i);
    expect(tail.length, `${where}: at most one stopped message`).toBeLessThanOrEqual(1);
    if (tail.length === 1) {
      const stopped = history.at(-1)!;
      expect(stopped.status).toBe("stopped");
      expect(scenario.stepTexts[i - 1]!.startsWith(textOf(stopped)), `${where}: partial text is a prefix`).toBe(true);
    }
    outcome = "draft";
    draftShapes.push(finished.map((f) => f.split("|").slice(0, 2).join(":")).join(" "));
  } else {
    outcome = "absent";
  }
  expect(session.draft).toBeUndefined();
  expect(history.filter((m) => textOf(m) === RUN_USER).length, `${where}: the run's user message at most once`).toBeLessThanOrEqual(1);

  // The session takes the next write, and a fresh process agrees with this one.
  await session.append({ role: "user", parts: [{ type: "text", text: "AFTER" }] });
  const again = await sessions.open(REF, scenario.options);
  expect(again.diagnostics.filter((d) => d.fatal)).toEqual([]);
  expect(again.draft).toBeUndefined();
  const final = await fullHistory(again);
  expectContiguous(final);
  expect(final.map(signature)).toEqual([...history.map(signature), "user||AFTER|"]);
  expect(again.revision).toBe(session.revision);
  return outcome;
}

/** What finished drafts committed, per scenario (reset by each test). */
let draftShapes: string[] = [];

/** Torn lengths worth trying for an append of `bytes`: around every line end, and a sweep. */
function tornLengths(bytes: number, lineEnds: readonly number[]): number[] {
  const out = new Set<number>();
  for (const end of lineEnds) for (const t of [end - 2, end - 1, end, end + 1]) if (t > 0 && t < bytes) out.add(t);
  for (let i = 1; i < 12; i++) out.add(Math.floor((bytes * i) / 12));
  out.add(1);
  out.add(bytes - 1);
  return [...out].filter((t) => t > 0 && t <= bytes).sort((a, b) => a - b);
}

describe("crash points of run() commits", () => {
  let total = 0;
  let ran = 0;
  for (const scenario of scenarios) {
    it(`${scenario.name}: every mutating operation, and torn appends`, async () => {
      const ops = await operations(scenario);
      const names = ops.map((op) => `${op.name} ${op.path.slice(P.dir.length + 1)}`);
      // The run's shape: the lock first, draft writes while streaming, one append for the commit.
      expect(names[0]).toBe("createExclusive writer.lock");
      expect(names.at(-1)).toBe("remove writer.lock");
      expect(names.filter((n) => n === "append messages/active.jsonl").length).toBe(scenario.recovered ? 2 : 1);
      expect(names.filter((n) => n === "replace messages/assistant_message.json").length).toBeGreaterThanOrEqual(4);
      if (scenario.options.summarizer) expect(names.filter((n) => n.startsWith("replace messages/segments/"))).toHaveLength(1);

      const outcomes: Record<string, number> = {};
      draftShapes = [];
      let points = 0;
      for (const op of ops) {
        const { disk, error, crash } = await crashAt(scenario, op.k);
        expect(crash?.operation.k, `crash point ${op.k} reached`).toBe(op.k);
        expect(crash?.operation.name).toBe(op.name);
        expect(crash?.operation.path).toBe(op.path);
        if (error !== undefined) expect(error, `crash point ${op.k}`).toBeInstanceOf(SimulatedCrashError);
        const outcome = await verify(scenario, disk, `${scenario.name} @${op.k} ${names[op.k - 1]}`);
        // A run that resolved was acknowledged to its caller: its commit must be on disk.
        if (error === undefined) expect(outcome, `crash point ${op.k}: an acknowledged run is committed`).toBe("committed");
        outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
        points += 1;
        if (op.name !== "append") continue;
        // Torn prefixes of the commit's batch.
        let captured: Uint8Array | undefined;
        const inner = new MemoryStorage();
        await scenario.prepare(inner);
        const probe = new FaultyStorage(inner, { crashAt: op.k, tornBytes: (bytes) => (captured = bytes).length });
        await scenario.process(probe).catch(() => undefined);
        await probe.revive();
        const bytes = captured!;
        const lineEnds: number[] = [];
        bytes.forEach((b, i) => b === 0x0a && lineEnds.push(i + 1));
        for (const torn of tornLengths(bytes.length, lineEnds)) {
          const crashed = await crashAt(scenario, op.k, torn);
          expect(crashed.crash?.tornBytes).toBe(torn);
          const outcome = await verify(scenario, crashed.disk, `${scenario.name} @${op.k} append torn at ${torn}/${bytes.length}`);
          // Only a batch missing nothing but its final newline is committed.
          if (torn < bytes.length - 1) expect(outcome, `torn at ${torn}/${bytes.length}`).not.toBe("committed");
          outcomes[`torn-${outcome}`] = (outcomes[`torn-${outcome}`] ?? 0) + 1;
          points += 1;
        }
      }
      total += points;
      ran += 1;
      // Every kind of outcome is reached somewhere.
      expect(outcomes["committed"]).toBeGreaterThan(0);
      expect(outcomes["draft"]).toBeGreaterThan(0);
      expect(outcomes["absent"]).toBeGreaterThan(0);
      expect(points).toBeGreaterThan(30);
      // Recovered drafts cover the user message alone, a partial first step, and a completed step plus a partial second one.
      expect(new Set(draftShapes)).toEqual(
        new Set([
          "user:",
          "user: assistant:stopped",
          "user: assistant:completed assistant:stopped",
          ...(draftShapes.includes("user: assistant:completed") ? ["user: assistant:completed"] : []),
        ]),
      );
    }, 20_000);
  }

  it("covers 150+ crash points in all", (ctx) => {
    if (ran < scenarios.length) ctx.skip("needs every scenario of this file to have run");
    expect(total).toBeGreaterThanOrEqual(150);
  });
});
