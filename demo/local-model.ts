/**
 * The playground's built-in model: a {@linkcode Provider} that needs no network. It
 * answers deterministically (the same request gives the same reply), streams its reply
 * in small chunks with a delay per chunk, calls the demo tools when a message asks for
 * the time, arithmetic or dice (thinking aloud first, as reasoning, before such a call), and reports realistic usage: input tokens are the core's
 * estimate of the composed request (`estimateModelInputTokens`), output tokens are
 * characters / 4. Like a real provider it refuses a request longer than its context
 * window with {@linkcode ContextLengthExceededError}, so the engine's fold applies.
 *
 * Its replies explain what sessionfold is doing, so chatting with it is a tour.
 */
import {
  ContextLengthExceededError,
  estimateModelInputTokens,
  type MessageRecord,
  type ModelRequest,
  type Provider,
  type ProviderEvent,
  type ProviderIdentity,
  type ToolPart,
} from "../core/mod.ts";

/** Options of {@linkcode LocalModel}. */
export interface LocalModelOptions {
  /** The context window it enforces, read at each request (the agent settings can change it). */
  readonly contextWindow: () => number;
  /** Milliseconds between streamed chunks, read at each chunk. */
  readonly chunkDelayMs: () => number;
  /**
   * Once more than this many characters of text have streamed in a reply, the stream holds
   * (the next chunk never comes; a Stop or a reload ends it): read at each chunk. What lets a
   * test stop a reply in its middle whatever the machine's speed. Default: never.
   */
  readonly holdAfterTextChars?: () => number;
}

/** How long a held stream waits for its next chunk: longer than any test or demo. */
const HELD_MS = 3_600_000;

/** The identity stamped on the local model's messages. */
export const LOCAL_MODEL_IDENTITY: ProviderIdentity = { provider: "sessionfold-demo", api: "local", model: "local-1" };

/** A deterministic, offline model for the playground. */
export class LocalModel implements Provider {
  readonly identity = LOCAL_MODEL_IDENTITY;
  readonly #options: LocalModelOptions;

  constructor(options: LocalModelOptions) {
    this.#options = options;
  }

  async *stream(request: ModelRequest): AsyncIterable<ProviderEvent> {
    const inputTokens = estimateModelInputTokens({ system: request.system, summary: request.summary, messages: request.messages }, request.tools);
    const window = this.#options.contextWindow();
    if (inputTokens > window) {
      throw new ContextLengthExceededError(`local model: the request is about ${inputTokens} tokens, over its ${window}-token context window`);
    }
    const plan = planReply(request, inputTokens, window);
    let outputChars = 0;
    for (const chunk of chunks(plan.reasoning ?? "")) {
      await pause(this.#options.chunkDelayMs(), request.signal);
      if (request.signal.aborted) return;
      outputChars += chunk.length;
      yield { type: "reasoning-delta", text: chunk };
    }
    let textChars = 0;
    const held = () => textChars > (this.#options.holdAfterTextChars?.() ?? Number.POSITIVE_INFINITY);
    for (const chunk of chunks(plan.text)) {
      await pause(held() ? HELD_MS : this.#options.chunkDelayMs(), request.signal);
      if (request.signal.aborted) return;
      outputChars += chunk.length;
      textChars += chunk.length;
      yield { type: "text-delta", text: chunk };
    }
    if (plan.toolCall) {
      await pause(held() ? HELD_MS : this.#options.chunkDelayMs() * 4, request.signal);
      if (request.signal.aborted) return;
      outputChars += plan.toolCall.toolName.length + JSON.stringify(plan.toolCall.input).length;
      yield { type: "tool-call", ...plan.toolCall };
    }
    const outputTokens = Math.ceil(outputChars / 4);
    yield { type: "usage", usage: { input_tokens: inputTokens, output_tokens: outputTokens, total_tokens: inputTokens + outputTokens } };
  }
}

interface ReplyPlan {
  /** Thinking streamed before the text, as a reasoning model does (only when it decides to call a tool). */
  readonly reasoning?: string;
  readonly text: string;
  readonly toolCall?: { toolCallId: string; toolName: string; input: unknown };
}

/** Decides what to say for a request. Pure. */
export function planReply(request: Pick<ModelRequest, "system" | "summary" | "messages" | "tools">, inputTokens: number, window: number): ReplyPlan {
  const last = request.messages.at(-1);
  const toolParts = last?.role === "assistant" ? last.parts.filter((p): p is ToolPart => p.type === "tool" && p.state !== "input-available") : [];
  if (toolParts.length > 0) return { text: answerFromTools(toolParts) };

  const userMessage = request.messages.findLast((m) => m.role === "user");
  const said = userMessage ? textOf(userMessage) : "";
  const seed = hash(`${said}\u0000${userMessage?.sequence ?? 0}`);
  const offered = new Set(request.tools.map((t) => t.name));
  const callId = `call_${(seed >>> 0).toString(36)}`;

  const expression = arithmetic(said);
  if (expression && offered.has("calculator")) {
    return {
      reasoning: `The message asks for ${expression}. Arithmetic done in my head can slip; the calculator tool computes it exactly.`,
      text: "Let me work that out with the calculator.",
      toolCall: { toolCallId: callId, toolName: "calculator", input: { expression } },
    };
  }
  const dice = diceRequest(said);
  if (dice && offered.has("dice")) {
    return {
      reasoning: `A roll of ${dice.count}d${dice.sides} must be random: the dice tool rolls it.`,
      text: `Rolling ${dice.count}d${dice.sides} for you.`,
      toolCall: { toolCallId: callId, toolName: "dice", input: dice },
    };
  }
  if (/\b(time|clock|date|today|what day)\b/i.test(said) && offered.has("clock")) {
    return {
      reasoning: "I cannot know the time without looking: the clock tool reads this page's clock.",
      text: "I'll check the clock.",
      toolCall: { toolCallId: callId, toolName: "clock", input: {} },
    };
  }
  return { text: conversationalReply(request, said, seed, inputTokens, window) };
}

function textOf(message: MessageRecord): string {
  return message.parts
    .map((p) => (p.type === "text" ? p.text : ""))
    .join("\n")
    .trim();
}

/** An arithmetic expression in the text, e.g. "what is 17 * 23?" → "17 * 23". */
function arithmetic(text: string): string | undefined {
  const match = /(?:^|[^\w.])(\(?\s*-?\d+(?:\.\d+)?\s*\)?(?:\s*[-+*/×÷^%]\s*\(?\s*-?\d+(?:\.\d+)?\s*\)?)+)/.exec(text);
  if (!match) return undefined;
  const expression = match[1]!.trim();
  // "2-3" inside a date or an id is not a question; ask for an operator with spaces or a cue word.
  if (!/[*/×÷^%+]/.test(expression) && !/\b(calc|compute|what is|what's|minus|subtract)/i.test(text)) return undefined;
  return expression;
}

function diceRequest(text: string): { count: number; sides: number } | undefined {
  const notation = /\b(\d{1,2})?d(\d{1,4})\b/i.exec(text);
  if (notation && /\b(roll|dice|die|d\d)/i.test(text)) {
    return { count: Math.min(20, Math.max(1, Number(notation[1] ?? 1))), sides: Math.min(1000, Math.max(2, Number(notation[2]))) };
  }
  if (/\b(roll|dice|die)\b/i.test(text)) return { count: 2, sides: 6 };
  return undefined;
}

function answerFromTools(parts: readonly ToolPart[]): string {
  return parts
    .map((part) => {
      if (part.state === "output-error") return `The \`${part.tool_name}\` tool failed: ${part.error ?? "unknown error"}.`;
      const output = part.output as Record<string, unknown> | null;
      switch (part.tool_name) {
        case "calculator":
          return `**${String(output?.["expression"])} = ${
            String(output?.["result"])
          }**\n\nThe calculator ran in this page; its call and result are stored as one tool part of my previous message.`;
        case "dice": {
          const rolls = Array.isArray(output?.["rolls"]) ? (output["rolls"] as number[]) : [];
          return `You rolled ${rolls.map((r) => `**${r}**`).join(", ")} — total **${String(output?.["total"])}**.`;
        }
        case "clock":
          return `It is **${String(output?.["local"])}** (${String(output?.["timezone"])}).`;
        default:
          return `\`${part.tool_name}\` answered: \`${JSON.stringify(output)}\``;
      }
    })
    .join("\n\n");
}

interface Topic {
  readonly title: string;
  /** Words in a message that ask about this topic. */
  readonly asks: RegExp;
  /** One sentence on why it matters to a user. */
  readonly why: string;
  readonly body: string;
  readonly points: readonly string[];
  readonly code: string;
}

const TOPICS: readonly Topic[] = [
  {
    title: "commits",
    asks: /\b(commit|commits|stored?|saved?|revisions?|atomic)\b/i,
    why: "**Why it matters:** a crash can only ever lose the turn in flight, and even that is kept as a draft.",
    body:
      "Each turn is committed as one atomic batch: your message, any tool steps and my final answer are appended to `active.jsonl` together, then `meta.json` gets the next revision.",
    points: [
      "Nothing half-written ever counts as history.",
      "The revision only goes up.",
      "A second writer would get a typed error instead of corrupting the file.",
    ],
    code:
      'const run = session.run(text, { provider, tools });\nfor await (const e of run) if (e.type === "text-delta") show(e.text);\nconst { revision } = await run.result;',
  },
  {
    title: "drafts",
    asks: /\b(drafts?|stream(ing)?|reload(ing)?)\b/i,
    why: "**Why it matters:** a long answer is never lost to a closed laptop lid or a reloaded tab.",
    body:
      "While I stream, the reply lives in `assistant_message.json`, replaced atomically a few times a second. Reload the tab mid-reply and the draft is still there, ready to be finished as *stopped*.",
    points: [
      "Draft writes are coalesced, so storage never slows the stream.",
      "The pending user message is kept in the draft too.",
      "A stale draft is discarded on open.",
    ],
    code: 'const session = await sessions.open(ref);\nif (session.draft) await session.finishDraft(); // commits it as "stopped"',
  },
  {
    title: "compaction",
    asks: /\b(compact(ion|ed|s)?|summar(y|ies|ize)|segments?|context window|tokens?)\b/i,
    why: "**Why it matters:** the next request costs the same whether a thousand or a million messages came before it.",
    body:
      "When the provider's real usage reaches 95% of the context window, the oldest half of the Active window becomes an immutable segment with one cumulative summary. The next request must fit in 50% of the window.",
    points: ["Exactly one summarizer call per compaction.", "Segments are never rewritten.", "Older history stays readable, forkable and exportable."],
    code: '// messages/segments/000000000001-000000000012.jsonl\n{"record_type":"summary","through_sequence":12,"text":"#1 user: …"}',
  },
  {
    title: "bounded opening",
    asks: /\b(open(ing|s)?|fast|speed|slow|million|large|scale|grow)\b/i,
    why: "**Why it matters:** opening the session list and a session stays instant for the life of a project.",
    body:
      "Opening a session reads `meta.json`, the tail of the newest segment and the Active window — never older history. A session with a million messages opens as fast as this one.",
    points: ["Older segments are paged in only when you scroll back.", "Composing the next request is O(Active).", "The summary carries everything older."],
    code: "let page = await session.messages();\npage = await session.messages({ beforeSequence: page[0].sequence }); // one older segment",
  },
  {
    title: "tabs and ownership",
    asks: /\b(tabs?|locks?|owners?(hip)?|concurren\w*|windows)\b/i,
    why: "**Why it matters:** two windows on one conversation can never interleave their writes.",
    body:
      "Writer ownership is a Web Lock held by this tab's storage worker. Open this session in a second tab: it follows my commits over a BroadcastChannel, and a write from it while I stream gets a `WriterLockedError`.",
    points: [
      "A closed or crashed tab frees its lock at once.",
      "Nobody deletes another owner's lock.",
      "A stale view gets a `RevisionConflictError` and reloads.",
    ],
    code: "browser.onCommit(({ refText }) => refText === formatSessionRef(session.ref) && session.reload());",
  },
  {
    title: "recovery",
    asks: /\b(crash(es|ed)?|recover(y|ed)?|corrupt(ion|ed)?|diagnostics?|torn)\b/i,
    why: "**Why it matters:** a damaged file is reported precisely instead of being silently rewritten.",
    body:
      "On open, recovery applies the format's rules in order: a torn final line is ignored, corruption is reported with its file and line, duplicates left by an interrupted compaction are dropped, and a stale draft is discarded.",
    points: ["Diagnostics say what was found and where.", "Corruption blocks writes instead of guessing.", "`meta.json` is rebuilt when it is behind."],
    code: "for (const d of session.diagnostics) console.log(d.code, `${d.file}:${d.line}`, d.message);",
  },
  {
    title: "portability",
    asks: /\b(export|import|redact(ed|ion)?|deepcode|rho|formats?|portab\w*)\b/i,
    why: "**Why it matters:** your history is a documented set of files, not a prisoner of one tool.",
    body:
      "A session can leave as a Rho snapshot, a DeepCode v1 stream or a pi session and come back in; pi, Codex and Claude Code sessions come in too. Redacted exports mask secrets such as API keys before any byte leaves the page.",
    points: ["Imports are staged and moved into place in one step.", "An import keeps the source's revision.", "Raw reasoning never goes into a Rho snapshot."],
    code: "const portable = await session.exportPortable();\nconst bytes = writeDeepCodeV1(prepareExport(portable, { redact: true }).session);",
  },
  {
    title: "forks",
    asks: /\b(forks?|branch(es)?|cop(y|ies))\b/i,
    why: "**Why it matters:** you can try a different direction without touching the original conversation.",
    body:
      "Forking copies the whole history — every segment, the Active window and the instruction — into a new session with the same sequences and a `forked_from` note. It is the one operation that reads everything.",
    points: ["The copy is staged in a hidden folder first.", "A crash never leaves half a fork.", "Both sessions then grow independently."],
    code: 'const copy = await sessions.fork(session.ref, "experiment");\ncopy.meta.forked_from; // { session_id, through_sequence }',
  },
];

const SUGGESTIONS = [
  "Reload the tab while I am streaming: the draft comes back, ready to be finished as stopped.",
  "Open this session in a second tab: it follows my commits and shows who owns the session.",
  "Watch the context gauge: at the 95% mark the next turn compacts, and the History panel shows the new segment.",
  "Ask me what 17 * 23 is, to roll 3d20, or what time it is: each calls a tool that runs in this page.",
  "Export this session redacted: API keys in messages are masked before the file is written.",
  "Fork this session and take the copy somewhere else: both keep every message.",
  "Ask me what you said first after a compaction: I only see the summary and the Active window.",
];

const REMARKS = [
  "that goes through exactly this path: streamed into the draft, then committed with my answer.",
  "every word of it is now part of this session's history, in `active.jsonl`.",
  "it will stay readable after compaction too: segments keep every message, the summary keeps the gist.",
  "you can export it, redacted or not, or fork the session right here and take it somewhere else.",
  "a crash mid-reply would not lose it: it sits in the draft until the turn commits.",
];

function conversationalReply(request: Pick<ModelRequest, "summary" | "messages">, said: string, seed: number, inputTokens: number, window: number): string {
  const parts: string[] = [];
  if (/\b(first|earlier|remember|recall|summary|before)\b/i.test(said)) parts.push(recollection(request));

  // A tour: the first topic (from the seed) not already explained in what this request carries.
  const seen = [request.summary ?? "", ...request.messages.filter((m) => m.role === "assistant").map(textOf)].join("\n");
  const start = Math.floor(seed / 7) % TOPICS.length;
  const order = TOPICS.map((_, i) => TOPICS[(start + i) % TOPICS.length]!);
  // A topic the message asks about is explained in full, even again; otherwise the tour goes on.
  const asked = TOPICS.find((t) => t.asks.test(said));
  const fresh = asked ?? order.find((t) => !seen.includes(`**${headline(t)}.**`));
  const topic = fresh ?? order[0]!;
  if (fresh) {
    parts.push(`**${headline(topic)}.** ${topic.body}`);
    parts.push(topic.points.map((p) => `- ${p}`).join("\n"));
    parts.push(`\`\`\`ts\n${topic.code}\n\`\`\``);
    parts.push(topic.why);
  } else {
    // Everything here was explained already: a short answer, as a real model would give.
    parts.push(`**${headline(topic)}, in short:** ${topic.points[seed % topic.points.length]!}`);
  }
  if (said) {
    const quoted = said.replace(/\s+/g, " ").slice(0, 90);
    parts.push(`About “${quoted}${said.length > 90 ? "…" : ""}”: ${REMARKS[seed % REMARKS.length]!}`);
  }
  parts.push(`**Try this:** ${SUGGESTIONS[Math.floor(seed / 3) % SUGGESTIONS.length]!}`);
  const earlier = request.summary ? "the instruction, the cumulative summary of older messages" : "the instruction";
  const share = Math.round((inputTokens / window) * 100);
  parts.push(
    `_This request carried ${earlier} and ${request.messages.length} message${request.messages.length === 1 ? "" : "s"} of the Active window: about ${
      inputTokens.toLocaleString("en-US")
    } of my ${window.toLocaleString("en-US")} tokens (${share}%). At 95% the oldest half of the Active window becomes a segment._`,
  );
  return parts.join("\n\n");
}

function headline(topic: Topic): string {
  return topic.title[0]!.toUpperCase() + topic.title.slice(1);
}

/** What the model can tell of the earliest conversation: the summary's first lines, else the oldest message it sees. */
function recollection(request: Pick<ModelRequest, "summary" | "messages">): string {
  if (request.summary) {
    const lines = request.summary.split("\n").filter((line) => /^#\d+ /.test(line)).slice(0, 2);
    if (lines.length > 0) return `From the summary of our earlier conversation:\n\n${lines.map((l) => `> ${l}`).join("\n")}`;
  }
  const oldest = request.messages.find((m) => m.role === "user");
  return oldest ? `The oldest message I can see is #${oldest.sequence}: “${textOf(oldest).slice(0, 80)}”.` : "I see no earlier messages.";
}

/** Splits text into small chunks of a few words (spaces kept), as a streaming API would. */
export function chunks(text: string): string[] {
  const words = text.match(/\S+\s*|\s+/g) ?? [];
  const out: string[] = [];
  for (let i = 0; i < words.length; i += 3) out.push(words.slice(i, i + 3).join(""));
  return out;
}

/** FNV-1a, for deterministic choices. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Waits `ms`, or less when `signal` aborts (it never rejects). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted || ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
