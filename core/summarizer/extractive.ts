import { InvalidInputError } from "../errors.ts";
import type { MessagePart, MessageRecord } from "../schema/mod.ts";
import type { Summarizer, SummaryRequest, SummaryResult } from "../model/mod.ts";

/**
 * Default upper bound on the length (`.length`, UTF-16 code units) of an extractive summary.
 *
 * @example
 * ```ts
 * new ExtractiveSummarizer().maxChars === DEFAULT_SUMMARY_MAX_CHARS; // true (4000)
 * ```
 * @throws nothing: it is a constant.
 */
export const DEFAULT_SUMMARY_MAX_CHARS = 4000;

/** Most characters of a message's text kept on its line. */
const SNIPPET_CHARS = 160;
/** Most characters of a tool call's JSON input kept on its line. */
const TOOL_INPUT_CHARS = 60;
/** First line of a previous summary whose oldest content was cut off. */
const TRIMMED_MARK = "… (earlier summary trimmed)";

/**
 * Options of an {@linkcode ExtractiveSummarizer}.
 *
 * @example
 * ```ts
 * const options: ExtractiveSummarizerOptions = { maxChars: 2000 };
 * ```
 * @throws nothing itself; the constructor throws {@linkcode InvalidInputError} for a bad `maxChars`.
 */
export interface ExtractiveSummarizerOptions {
  /** Upper bound on the summary's `.length` (UTF-16 code units), a positive integer. Default 4000. */
  readonly maxChars?: number;
}

/** One line of a summary and the message sequence it came from. */
interface Line {
  readonly sequence: number;
  readonly text: string;
}

/**
 * A deterministic {@linkcode Summarizer} that needs no model and no network: the
 * default of `sessionfold compact` and of the browser demo. The summary it writes is
 * cumulative: the previous summary (its oldest lines cut first when over budget),
 * then one line per message — `#<seq> <role>: <first sentences, at most ~160
 * characters>` — and one per tool call — `#<seq> tool <name>(<short input>) → ok`.
 * Raw reasoning, file data, URLs, tool outputs and provider context never enter it.
 * Its length never exceeds `maxChars`, so any number of compactions stays bounded,
 * and it is never empty when it was given at least one message. It reports no usage
 * (it costs nothing).
 *
 * @example
 * ```ts
 * import { Session } from "sessionfold";
 * declare const session: Session;
 *
 * const summarizer = new ExtractiveSummarizer({ maxChars: 2000 });
 * await session.compact({ summarizer });
 * // or: new Sessions({ storage, defaults: { summarizer, contextWindow: 128_000 } })
 * ```
 * @throws {InvalidInputError} from the constructor when `maxChars` is not a positive integer.
 */
export class ExtractiveSummarizer implements Summarizer {
  /** The bound on every summary's `.length`. */
  readonly maxChars: number;

  /**
   * @example
   * ```ts
   * new ExtractiveSummarizer({ maxChars: 2000 }).maxChars; // 2000
   * ```
   * @throws {InvalidInputError} when `maxChars` is not a positive integer.
   */
  constructor(options: ExtractiveSummarizerOptions = {}) {
    const maxChars = options.maxChars ?? DEFAULT_SUMMARY_MAX_CHARS;
    if (!Number.isSafeInteger(maxChars) || maxChars < 1) {
      throw new InvalidInputError(`ExtractiveSummarizer maxChars ${String(maxChars)}: expected a positive integer`, { maxChars });
    }
    this.maxChars = maxChars;
  }

  /**
   * Builds the cumulative summary of `request.previousSummary` plus `request.messages`.
   * Same input, same output.
   *
   * @example
   * ```ts
   * import type { MessageRecord } from "sessionfold";
   * declare const messages: MessageRecord[];
   * const signal = new AbortController().signal;
   * const { text } = await new ExtractiveSummarizer().summarize({ previousSummary: null, messages, signal });
   * // "#1 user: Fix the build.\n#2 assistant: Done.\n#2 tool bash({\"cmd\":\"npm test\"}) → ok"
   * ```
   * @throws the signal's `reason` when `request.signal` is already aborted.
   */
  summarize(request: SummaryRequest): Promise<SummaryResult> {
    try {
      // Not `throwIfAborted()`: the host's signal may be a polyfill's, which has only what `isAbortSignal` asks for.
      if (request.signal?.aborted) throw request.signal.reason;
      return Promise.resolve({ text: extractiveSummary(request.previousSummary, request.messages, this.maxChars) });
    } catch (error) {
      return Promise.reject(error);
    }
  }
}

function extractiveSummary(previousSummary: string | null, messages: readonly MessageRecord[], maxChars: number): string {
  const previous = (previousSummary ?? "").trim();
  const lines = messages.flatMap(messageLines);
  if (lines.length === 0 && messages.length > 0) lines.push(withoutTextLine(messages));
  if (lines.length === 0) return fitTail(previous === "" ? "(nothing to summarize)" : previous, maxChars);

  const full = join(previous, lines.map((line) => line.text).join("\n"));
  if (full.length <= maxChars) return full;

  // Over budget: the previous summary keeps at least a quarter of the room (so the
  // story so far never vanishes in one step), the new lines get the rest, and each
  // side loses its oldest content first.
  const previousShare = previous === "" ? 0 : Math.min(previous.length, Math.floor(maxChars / 4));
  const newBlock = newestLines(lines, maxChars - (previousShare > 0 ? previousShare + 1 : 0));
  const previousBlock = previous === "" ? "" : trimFront(previous, maxChars - newBlock.length - 1);
  return fitTail(join(previousBlock, newBlock), maxChars);
}

function join(first: string, second: string): string {
  return first === "" ? second : second === "" ? first : `${first}\n${second}`;
}

/** The lines one message contributes, in part order: its text, files, then each tool call. */
function messageLines(message: MessageRecord): Line[] {
  const parts = [...message.parts].sort((a, b) => a.sequence - b.sequence);
  const text = parts
    .filter((part): part is Extract<MessagePart, { type: "text" }> => part.type === "text")
    .map((part) => part.text)
    .join(" ");
  const files = parts
    .filter((part): part is Extract<MessagePart, { type: "file" }> => part.type === "file")
    .map((part) => `[file ${oneLine(part.name ?? part.media_type)}]`);
  const head = [snippet(text), ...files].filter((s) => s !== "").join(" ");
  const status = message.role === "assistant" && message.status && message.status !== "completed" ? ` (${message.status})` : "";
  const lines: Line[] = [];
  if (head !== "") lines.push({ sequence: message.sequence, text: `#${message.sequence} ${message.role}${status}: ${head}` });
  for (const part of parts) {
    if (part.type !== "tool") continue;
    const outcome = part.state === "output-available" ? "ok" : part.state === "output-error" ? "error" : "no result";
    lines.push({ sequence: message.sequence, text: `#${message.sequence} tool ${oneLine(part.tool_name)}(${shortInput(part.input)}) → ${outcome}` });
  }
  return lines;
}

/** The fallback line when no message had anything to extract (only reasoning, provider context…). */
function withoutTextLine(messages: readonly MessageRecord[]): Line {
  const first = messages[0]!.sequence;
  const last = messages[messages.length - 1]!.sequence;
  const range = first === last ? `#${first}` : `#${first}-#${last}`;
  const count = messages.length === 1 ? "1 message" : `${messages.length} messages`;
  return { sequence: last, text: `${range} (${count} without text)` };
}

/** The first sentences of a text that fit in {@linkcode SNIPPET_CHARS}, whitespace collapsed. */
function snippet(text: string): string {
  const flat = oneLine(text);
  if (flat.length <= SNIPPET_CHARS) return flat;
  const head = flat.slice(0, SNIPPET_CHARS);
  let end = -1;
  // One character past the cut, so a "." that the cut happens to end on is not taken for a sentence end.
  for (const match of flat.slice(0, SNIPPET_CHARS + 1).matchAll(/[.!?。！？](?=\s)/gu)) end = match.index + match[0].length;
  if (end > 0) return `${head.slice(0, end)} …`;
  const space = head.lastIndexOf(" ");
  return `${cutAt(head, space > SNIPPET_CHARS / 2 ? space : SNIPPET_CHARS)}…`;
}

function shortInput(input: unknown): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(input);
  } catch {
    json = undefined; // a cyclic or BigInt input is still a call worth listing
  }
  const flat = oneLine(json ?? "");
  return flat.length <= TOOL_INPUT_CHARS ? flat : `${cutAt(flat, TOOL_INPUT_CHARS)}…`;
}

function oneLine(text: string): string {
  return text.replace(/\s+/gu, " ").trim();
}

/** `text.slice(0, n)` that never ends on the first half of a surrogate pair. */
function cutAt(text: string, n: number): string {
  const code = text.charCodeAt(n - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? n - 1 : n);
}

/** The last characters of `text` within `n` (n ≥ 1), never starting on the second half of a surrogate pair. */
function fitTail(text: string, n: number): string {
  if (text.length <= n) return text;
  let start = text.length - n;
  const code = text.charCodeAt(start);
  if (code >= 0xdc00 && code <= 0xdfff) start += 1;
  // A budget of one unit cannot hold a surrogate pair; an ellipsis keeps the summary non-empty.
  return start < text.length ? text.slice(start) : "…";
}

/** The newest lines within `budget`, the dropped oldest ones replaced by one marker line. */
function newestLines(lines: readonly Line[], budget: number): string {
  const all = lines.map((line) => line.text).join("\n");
  if (all.length <= budget) return all;
  const kept: string[] = [];
  let used = 0;
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!;
    const dropped = i > 0 ? omitted(lines[0]!, lines[i - 1]!) : "";
    const next = used + line.text.length + (kept.length > 0 ? 1 : 0);
    if (next + (dropped === "" ? 0 : dropped.length + 1) > budget) {
      const marker = omitted(lines[0]!, line);
      if (kept.length === 0) return fitTail(line.text, budget); // not even the newest line fits whole
      return used + marker.length + 1 <= budget ? [marker, ...kept].join("\n") : kept.join("\n");
    }
    kept.unshift(line.text);
    used = next;
  }
  return kept.join("\n");
}

function omitted(first: Line, last: Line): string {
  return first.sequence === last.sequence ? `… (#${first.sequence} omitted)` : `… (#${first.sequence}-#${last.sequence} omitted)`;
}

/** `previous` within `budget`, losing whole lines from its oldest end, marked as trimmed. */
function trimFront(previous: string, budget: number): string {
  if (budget <= 0) return "";
  const wasTrimmed = previous.startsWith(`${TRIMMED_MARK}\n`);
  const body = wasTrimmed ? previous.slice(TRIMMED_MARK.length + 1) : previous;
  if (!wasTrimmed && body.length <= budget) return body;
  const room = budget - TRIMMED_MARK.length - 1;
  if (room <= 0) return fitTail(body, budget);
  if (body.length <= room) return `${TRIMMED_MARK}\n${body}`;
  const breakAt = body.indexOf("\n", body.length - room - 1);
  if (breakAt >= 0 && breakAt < body.length - 1) return `${TRIMMED_MARK}\n${body.slice(breakAt + 1)}`;
  // Not even the newest line fits: keep its head (`#seq role: …`) and shorten its end.
  return `${TRIMMED_MARK}\n${cutAt(body.slice(body.lastIndexOf("\n") + 1), room)}`;
}
