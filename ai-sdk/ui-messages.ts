/**
 * AI SDK UI messages (`useChat`'s `messages`) in and out of a session, exactly.
 *
 * One assistant UI message is one turn: its steps (split at `step-start`) are the
 * stored per-step assistant messages, so the model reads every tool result right after
 * the step that called it, and each step's reasoning stays its own block. What the store
 * has no part type for (sources, `data-*` parts, `step-start` where a reader would not
 * assume it) and every UI field the stored part does not already say (a `dynamic-tool`
 * type, a part `state`, an approval) ride along in the `ai_sdk` extension field of the
 * stored message or part (docs/FORMAT.md keeps unknown fields), so reading gives back the
 * very UI message that was appended. Provider metadata becomes `provider-context` parts
 * in the shape `aiSdkProvider` writes, so the model that produced it gets it back.
 *
 * @module
 */
import type { UIMessage } from "ai";
import { InternalError, InvalidInputError, type MessagePart, type MessageRecord, type NewMessage, type ProviderIdentity, type Session } from "../core/mod.ts";
import { type KnownFields, knownOptions } from "../core/internal.ts";
import { storedMetadata, type StoredProviderMetadata } from "./prompt.ts";

/** What {@linkcode toUIMessages} puts in the `metadata` of a UI message that was not appended as one (a run's turn). */
export interface SessionfoldUIMetadata {
  /** The sequence of the turn's first stored message. */
  readonly sequence: number;
  readonly createdAt: string;
  /** The status of the turn's last step (`streaming` for a reply read from the draft). */
  readonly status?: string;
  /** The real usage of the turn's last step. */
  readonly usage?: MessageRecord["usage"];
}

/** The history a UI message function reads: a `Session`, or anything with its `messages` paging (and optionally its `draft`). */
export type UIMessageSource = Pick<Session, "messages"> & Partial<Pick<Session, "draft">>;

/** Options of {@linkcode appendUIMessages}. */
export interface AppendUIMessagesOptions {
  /**
   * The identity of the model that produced the assistant messages (`aiSdkProvider(model).identity`):
   * their provider metadata is then given back to that model. Without it the metadata is
   * kept for the UI only, under the identity `ai-sdk/ui-message/unknown`, which no model has.
   */
  readonly identity?: ProviderIdentity;
}

const APPEND_OPTION_FIELDS: KnownFields<AppendUIMessagesOptions> = { identity: true };

type UIPart = UIMessage["parts"][number];
type Json = Record<string, unknown>;
type StoredPart = MessagePart;

/** The extension field (message and part) that keeps what the stored shape does not say. */
const FIELD = "ai_sdk";

/** The `ai_sdk` field of a stored message that came from a UI message. */
interface MessageMark {
  /** The UI message's id (the first step's `message_id`; later steps are `<id>-step-<n>`). */
  readonly message_id: string;
  /** Whether the step starts with `step-start`, when not what a reader assumes (assistant: yes, user: no). */
  readonly step_start?: boolean;
  /** The UI message's `metadata` (first step only). */
  readonly metadata?: unknown;
  /** UI parts the store has no type for, each with its index among the step's UI parts. */
  readonly parts?: readonly { readonly at: number; readonly part: UIPart }[];
}

/** The `ai_sdk` field of a stored part: UI fields that differ from what the stored part reads as. */
interface PartMark {
  readonly set?: Json;
  readonly unset?: readonly string[];
}

/** Marks a UI reasoning part that came from a `reasoning-summary` part, so it goes back as one. */
const SUMMARY_MARK = { sessionfold: { kind: "reasoning-summary" } } as const;
const UI_ONLY_IDENTITY: ProviderIdentity = { provider: "ai-sdk", api: "ui-message", model: "unknown" };

/**
 * The session's whole history (every segment and Active, oldest first), then the draft
 * of an interrupted or still streaming run (its pending question and partial reply), as
 * AI SDK UI messages: what `useChat({ messages })` shows after a reload. A turn is one
 * assistant UI message whose id is its first step's `message_id`, each step opened by a
 * `step-start` part. Messages appended with {@linkcode appendUIMessages} come back exactly
 * as appended (id, part order, tool names, sources, data parts, provider metadata,
 * `metadata`); a run's turn gets {@linkcode SessionfoldUIMetadata} and `tool-<name>` parts.
 * A reply still streaming reads as the AI SDK's own message does before it ends: its last text
 * or reasoning part has `state: "streaming"`, the parts before it `done`.
 * The result passes the AI SDK's own `validateUIMessages`.
 *
 * @example
 * ```ts
 * import type { Session } from "sessionfold";
 * import { toUIMessages } from "sessionfold/ai-sdk";
 * declare const session: Session;
 *
 * const messages = await toUIMessages(session); // hand to useChat({ messages })
 * ```
 * @throws {CorruptSessionError} when a segment has an invalid line (from `session.messages`).
 */
export async function toUIMessages(session: UIMessageSource): Promise<UIMessage<SessionfoldUIMetadata>[]> {
  const pages: MessageRecord[][] = [];
  let page = await session.messages();
  while (page.length > 0) {
    pages.unshift(page);
    page = await session.messages({ beforeSequence: page[0]!.sequence });
  }
  const draft = session.draft;
  const records: MessageRecord[] = [...pages.flat(), ...(draft ? [...draft.pending, draft.record as MessageRecord] : [])];
  return groupTurns(records);
}

/** Stored messages as UI messages: consecutive steps of one turn become one UI message. */
export function groupTurns(records: readonly MessageRecord[]): UIMessage<SessionfoldUIMetadata>[] {
  const out: UIMessage<SessionfoldUIMetadata>[] = [];
  let turn: { ui: UIMessage<SessionfoldUIMetadata>; key: string | undefined; first: MessageRecord; last: MessageRecord } | undefined;
  const close = () => {
    if (!turn || turn.key !== undefined) return;
    turn.ui.metadata = turnMetadata(turn.first, turn.last);
    numberReasoning(turn.ui.parts);
  };
  for (const record of records) {
    const mark = markOf(record);
    const key = mark?.message_id;
    const continues = turn !== undefined && record.role === "assistant" && turn.ui.role === "assistant" && turn.key === key &&
      !(key !== undefined && record.message_id === key);
    if (turn && continues) {
      turn.ui.parts.push(...stepParts(record, mark));
      turn.last = record;
      continue;
    }
    close();
    const ui: UIMessage<SessionfoldUIMetadata> = { id: key ?? record.message_id, role: record.role, parts: stepParts(record, mark) };
    if (mark && "metadata" in mark) ui.metadata = mark.metadata as SessionfoldUIMetadata;
    out.push(ui);
    turn = { ui, key, first: record, last: record };
  }
  close();
  return out;
}

/** The id the chat stream gives the n-th text or reasoning part of a turn (from 0). */
export function chatPartId(index: number): string {
  return `p${index}`;
}

/**
 * A run's turn: its reasoning parts get the ids the chat stream gave them (`p<n>`, n
 * counting the turn's text and reasoning parts), which the AI SDK client keeps.
 */
function numberReasoning(parts: UIPart[]): void {
  let count = 0;
  parts.forEach((part, index) => {
    if (part.type === "reasoning") parts[index] = { ...part, id: chatPartId(count) };
    if (part.type === "text" || part.type === "reasoning") count += 1;
  });
}

function turnMetadata(first: MessageRecord, last: MessageRecord): SessionfoldUIMetadata {
  return {
    sequence: first.sequence,
    createdAt: first.created_at,
    ...(last.status ? { status: last.status } : {}),
    ...(last.usage ? { usage: last.usage } : {}),
  };
}

function markOf(record: MessageRecord): MessageMark | undefined {
  const mark = (record as { [FIELD]?: unknown })[FIELD];
  return typeof mark === "object" && mark !== null && typeof (mark as MessageMark).message_id === "string" ? (mark as MessageMark) : undefined;
}

/** One stored message as the UI parts of its step. */
function stepParts(record: MessageRecord, mark: MessageMark | undefined): UIPart[] {
  // A run's provider context stays in the store (the chat stream sends none); an appended message gets back what it had.
  const metadata = mark ? storedMetadata(record.parts) : new Map<string, Record<string, unknown>>();
  const counters = newCounters();
  const parts: UIPart[] = [];
  for (const part of record.parts) {
    if (part.type === "provider-context") continue;
    const ui = defaultUIPart(part, metadata.get(metadataKey(part, counters)));
    parts.push(applyMark(ui, (part as { [FIELD]?: PartMark })[FIELD]));
  }
  if (record.status === "streaming") markStillStreaming(record, parts);
  for (const { at, part } of mark?.parts ?? []) parts.splice(at, 0, part);
  if (mark?.step_start ?? record.role === "assistant") parts.unshift({ type: "step-start" });
  return parts;
}

/**
 * A reply still being written (the draft, docs/FORMAT.md "`assistant_message.json` (the draft)"):
 * its last text or reasoning part reads `state: "streaming"`, as the AI SDK's own message does
 * before that part's end; the parts before it, ended when the next one began, read `done`.
 */
function markStillStreaming(record: MessageRecord, parts: UIPart[]): void {
  const last = record.parts.findLast((part) => part.type !== "provider-context");
  const ui = parts.at(-1);
  if ((last?.type === "text" || last?.type === "reasoning") && (ui?.type === "text" || ui?.type === "reasoning")) {
    parts[parts.length - 1] = { ...ui, state: "streaming" };
  }
}

interface Counters {
  text: number;
  reasoning: number;
  file: number;
}

function newCounters(): Counters {
  return { text: 0, reasoning: 0, file: 0 };
}

/** The `part:key` a part's provider metadata is stored under (as `aiSdkProvider` numbers them); advances the counters. */
function metadataKey(part: StoredPart, counters: Counters): string {
  switch (part.type) {
    case "text":
      return `text:${counters.text++}`;
    case "reasoning":
    case "reasoning-summary":
      return `reasoning:${counters.reasoning++}`;
    case "file":
      return `file:${counters.file++}`;
    case "tool":
      return `tool-call:${part.tool_call_id}`;
    default:
      return "";
  }
}

/** What a stored part reads as when nothing else is known about it. */
function defaultUIPart(part: StoredPart, providerMetadata: Record<string, unknown> | undefined): UIPart {
  const meta = providerMetadata ? { providerMetadata: providerMetadata as never } : {};
  switch (part.type) {
    case "text":
      return { type: "text", text: part.text, state: "done", ...meta };
    case "reasoning":
      return { type: "reasoning", text: part.text, state: "done", ...meta };
    case "reasoning-summary":
      return { type: "reasoning", text: part.text, state: "done", providerMetadata: { ...providerMetadata, ...SUMMARY_MARK } as never };
    case "file": {
      const url = part.data !== undefined ? `data:${part.media_type};base64,${part.data}` : part.url!;
      return { type: "file", mediaType: part.media_type, ...(part.name !== undefined ? { filename: part.name } : {}), url, ...meta };
    }
    case "tool": {
      const base = {
        type: `tool-${part.tool_name}`,
        toolCallId: part.tool_call_id,
        input: part.input,
        ...(providerMetadata ? { callProviderMetadata: providerMetadata } : {}),
      };
      if (part.state === "output-available") return { ...base, state: "output-available", output: part.output ?? null } as UIPart;
      if (part.state === "output-error") return { ...base, state: "output-error", errorText: part.error ?? "the tool call failed" } as UIPart;
      return { ...base, state: "input-available" } as UIPart;
    }
  }
  throw new InvalidInputError(`a ${part.type} part has no UI form`, { type: part.type });
}

function applyMark(ui: UIPart, mark: PartMark | undefined): UIPart {
  if (!mark) return ui;
  const out: Json = { ...ui, ...mark.set };
  for (const key of mark.unset ?? []) delete out[key];
  return out as UIPart;
}

/**
 * Persists AI SDK UI messages (what `useChat` sends): validates them with the AI SDK's
 * own `validateUIMessages`, skips those whose `id` the session already holds (so a chat
 * app may send its whole list each time), and appends the rest in one commit. An
 * assistant UI message becomes one stored message per step (split at `step-start`), so
 * the model reads each tool result after its call; {@linkcode toUIMessages} gives every
 * appended message back exactly. Returns the appended sequences.
 *
 * @example
 * ```ts
 * import type { UIMessage } from "ai";
 * import type { Session } from "sessionfold";
 * import { appendUIMessages } from "sessionfold/ai-sdk";
 * declare const session: Session;
 * declare const messages: UIMessage[];
 *
 * const { sequences } = await appendUIMessages(session, messages);
 * ```
 * @throws {InvalidInputError} naming the message index when a message is not a valid UI message, has the `system` role (the instruction is not a message in sessionfold)
 * or an `id` an earlier message of `messages` has,
 * or when `options` is not an object or has a field it does not know.
 * @throws {InternalError} when the `ai` package cannot be loaded (not installed): it names the peer range and `npm install ai`.
 */
export async function appendUIMessages(
  session: UIMessageSource & Pick<Session, "append">,
  messages: readonly unknown[],
  options: AppendUIMessagesOptions = {},
): Promise<{ sequences: number[]; revision?: number }> {
  knownOptions(options, "appendUIMessages(session, messages, options)", APPEND_OPTION_FIELDS);
  const { validateUIMessages } = await loadAi();
  let valid: UIMessage[];
  try {
    valid = await validateUIMessages({ messages });
  } catch (error) {
    throw new InvalidInputError(
      `appendUIMessages: the messages are not valid AI SDK UI messages: ${error instanceof Error ? error.message : String(error)}`,
      {},
    );
  }
  const known = await knownIds(session, valid.map((m) => m.id));
  const fresh: NewMessage[] = [];
  // By UI index: the session's own check would name the stored message (a UI message can be several, one per step).
  const given = new Map<string, number>();
  valid.forEach((message, index) => {
    const earlier = given.get(message.id);
    if (earlier !== undefined) {
      throw new InvalidInputError(
        `appendUIMessages: messages[${index}].id ${JSON.stringify(message.id)} is given twice (messages[${earlier}] has it); nothing was written`,
        { index, id: message.id, earlier },
      );
    }
    given.set(message.id, index);
    if (known.has(message.id)) return;
    if (message.role === "system") {
      throw new InvalidInputError(
        `appendUIMessages: messages[${index}] (${message.id}) has role "system"; put the instruction in the session's instruction instead`,
        { index, id: message.id },
      );
    }
    fresh.push(...storedMessages(message, options.identity));
  });
  if (fresh.length === 0) return { sequences: [] };
  return await session.append(fresh);
}

/** The versions of `ai` this entry works with: package.json's peer range of `ai` (test/ai-sdk/without-ai.test.ts keeps the two equal). */
const AI_PEER_RANGE = "^5.0.0 || ^6.0.0 || ^7.0.173";

/**
 * The `ai` package, loaded at the first call, not at the top: importing the entry (`aiSdkProvider`
 * alone) must not need it installed. Its absence is the platform's failure to load a module,
 * which sessionfold types as an `InternalError`, naming the package, the range and the fix.
 */
async function loadAi(): Promise<typeof import("ai")> {
  try {
    return await import("ai");
  } catch (error) {
    const found = error instanceof Error ? error.message : String(error);
    throw new InternalError(
      `appendUIMessages needs the AI SDK package \`ai\` (${AI_PEER_RANGE}), an optional peer dependency, and it could not be loaded (${found}): install it with \`npm install ai\``,
      { package: "ai", peerRange: AI_PEER_RANGE },
      { cause: error },
    );
  }
}

/** The ids among `ids` the session already stores, paging back only while some are unresolved. */
async function knownIds(session: UIMessageSource, ids: readonly string[]): Promise<Set<string>> {
  const wanted = new Set(ids);
  const found = new Set<string>();
  let page = await session.messages();
  while (page.length > 0 && found.size < wanted.size) {
    for (const message of page) if (wanted.has(message.message_id)) found.add(message.message_id);
    page = await session.messages({ beforeSequence: page[0]!.sequence });
  }
  return found;
}

/** One UI message as stored messages: one per step (a user message is one step). */
function storedMessages(message: UIMessage, identity: ProviderIdentity | undefined): NewMessage[] {
  const assistant = message.role === "assistant";
  return splitSteps(message).map((step, index) => {
    const { parts, uiOnly } = storedParts(step.parts, identity ?? UI_ONLY_IDENTITY);
    const mark: MessageMark = {
      message_id: message.id,
      ...(step.stepStart !== assistant ? { step_start: step.stepStart } : {}),
      ...(index === 0 && message.metadata !== undefined ? { metadata: plain(message.metadata) } : {}),
      ...(uiOnly.length > 0 ? { parts: plain(uiOnly) } : {}),
    };
    return {
      role: message.role as "user" | "assistant",
      message_id: index === 0 ? message.id : `${message.id}-step-${index + 1}`,
      parts,
      [FIELD]: mark,
      ...(assistant ? { status: "completed" as const, ...(identity ? { provider: { ...identity } } : {}) } : {}),
    };
  });
}

/** An assistant message's parts cut at each `step-start`; a user message is one step without one. */
function splitSteps(message: UIMessage): { stepStart: boolean; parts: UIPart[] }[] {
  const steps = [{ stepStart: false, parts: [] as UIPart[] }];
  for (const part of message.parts) {
    if (part.type !== "step-start" || message.role !== "assistant") steps.at(-1)!.parts.push(part);
    else if (steps.length === 1 && !steps[0]!.stepStart && steps[0]!.parts.length === 0) steps[0]!.stepStart = true;
    else steps.push({ stepStart: true, parts: [] });
  }
  return steps;
}

/** One step's UI parts as stored parts (provider metadata as provider-context parts after their part) and the UI-only rest. */
function storedParts(uiParts: readonly UIPart[], identity: ProviderIdentity): { parts: StoredPart[]; uiOnly: { at: number; part: UIPart }[] } {
  const parts: StoredPart[] = [];
  const uiOnly: { at: number; part: UIPart }[] = [];
  const counters = newCounters();
  uiParts.forEach((ui, at) => {
    const converted = storedPart(ui);
    if (!converted) {
      uiOnly.push({ at, part: ui });
      return;
    }
    const part = { ...converted.part, sequence: parts.length + 1 } as StoredPart;
    const providerMetadata = converted.providerMetadata;
    const key = metadataKey(part, counters);
    const stored = providerMetadata !== undefined && Object.keys(providerMetadata).length > 0 ? providerMetadata : undefined;
    const mark = difference(ui as unknown as Json, defaultUIPart(part, stored) as unknown as Json);
    parts.push(mark ? { ...part, [FIELD]: mark } : part);
    if (stored) {
      const [kind, ...rest] = key.split(":");
      const data: StoredProviderMetadata = {
        part: kind as StoredProviderMetadata["part"],
        key: kind === "tool-call" ? rest.join(":") : Number(rest[0]),
        providerMetadata: stored,
      };
      parts.push({ sequence: parts.length + 1, type: "provider-context", ...identity, data });
    }
  });
  return { parts, uiOnly };
}

/** A UI part the store has a type for, as that part, with its provider metadata; `undefined` for UI-only parts. */
function storedPart(ui: UIPart): { part: Omit<StoredPart, "sequence">; providerMetadata?: Record<string, unknown> } | undefined {
  switch (ui.type) {
    case "text":
      return { part: { type: "text", text: ui.text }, providerMetadata: ui.providerMetadata };
    case "reasoning": {
      const { sessionfold, ...providerMetadata } = (ui.providerMetadata ?? {}) as Record<string, unknown> & { sessionfold?: { kind?: string } };
      const summary = sessionfold?.kind === "reasoning-summary";
      return { part: { type: summary ? "reasoning-summary" : "reasoning", text: ui.text }, providerMetadata: summary ? providerMetadata : ui.providerMetadata };
    }
    case "file": {
      const inline = /^data:([^;,]*);base64,(.*)$/s.exec(ui.url);
      const content = inline && inline[1] === ui.mediaType ? { data: inline[2]! } : { url: ui.url };
      return {
        part: { type: "file", media_type: ui.mediaType, ...(ui.filename !== undefined ? { name: ui.filename } : {}), ...content },
        providerMetadata: ui.providerMetadata,
      };
    }
  }
  if (ui.type !== "dynamic-tool" && !ui.type.startsWith("tool-")) return undefined;
  const tool = ui as {
    type: string;
    toolName?: string;
    toolCallId: string;
    state: string;
    input?: unknown;
    output?: unknown;
    errorText?: string;
    approval?: { reason?: string };
    callProviderMetadata?: Record<string, unknown>;
  };
  const name = tool.type === "dynamic-tool" ? tool.toolName! : tool.type.slice("tool-".length);
  const base = { type: "tool" as const, tool_call_id: tool.toolCallId, tool_name: name, input: tool.input ?? {} };
  const providerMetadata = tool.callProviderMetadata;
  if (tool.state === "output-available") return { part: { ...base, state: "output-available", output: tool.output ?? null }, providerMetadata };
  if (tool.state === "output-error") return { part: { ...base, state: "output-error", error: tool.errorText ?? "the tool call failed" }, providerMetadata };
  // The model reads a denied call as failed; a call without output is closed as an error when composed.
  if (tool.state === "output-denied") {
    return { part: { ...base, state: "output-error", error: tool.approval?.reason ?? "the user denied the tool call" }, providerMetadata };
  }
  return { part: { ...base, state: "input-available" }, providerMetadata };
}

/** What `ui` says that `fallback` (the stored part's reading) does not: `undefined` when nothing. */
function difference(ui: Json, fallback: Json): PartMark | undefined {
  const set: Json = {};
  const unset: string[] = [];
  for (const [key, value] of Object.entries(ui)) if (value !== undefined && !sameJson(value, fallback[key])) set[key] = value;
  for (const key of Object.keys(fallback)) if (ui[key] === undefined) unset.push(key);
  if (Object.keys(set).length === 0 && unset.length === 0) return undefined;
  return { ...(Object.keys(set).length > 0 ? { set: plain(set) } : {}), ...(unset.length > 0 ? { unset } : {}) };
}

/** A value as the store keeps it: JSON, without `undefined` fields. */
function plain<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keysA = Object.keys(a).filter((k) => (a as Json)[k] !== undefined);
  const keysB = Object.keys(b).filter((k) => (b as Json)[k] !== undefined);
  return keysA.length === keysB.length && keysA.every((k) => sameJson((a as Json)[k], (b as Json)[k]));
}
