import type { Diagnostic } from "../../jsonl/diagnostic.ts";
import type { MessagePart, MessageRecord } from "../../schema/message.ts";
import type { PortableSegment, PortableSession } from "../../model/mod.ts";
import { formatError } from "../errors.ts";
import { type JsonlSource, readJsonlStream } from "../jsonl-lines.ts";
import { ToolCallJoiner } from "../tool-joiner.ts";
import type { MutableToolPart } from "../mutable.ts";
import { type LoosePart, parsePiEntry, parsePiHeader, type PiEntry, type PiHeader } from "./entries.ts";
import { PI_EXTENSION_FIELD } from "./types.ts";

type PiToolPart = MutableToolPart & Record<string, unknown>;

/** What {@linkcode readPi} returns. */
export interface PiReadResult {
  readonly session: PortableSession;
  /** `truncated_tail` when the final line was an interrupted append. */
  readonly diagnostics: Diagnostic[];
  /** Entries of other branches of the tree, not imported (pi's context does not hold them either). */
  readonly offBranchEntries: number;
}

/**
 * Reads a pi-coding-agent session file (`~/.pi/agent/sessions/…/<timestamp>_<id>.jsonl`,
 * versions 1–3) into the format-neutral shape `Sessions.importPortable` takes. Streaming:
 * only the line being read is held, plus the validated entries.
 *
 * The entries form a tree (`id` / `parentId`); the active branch — from the last entry
 * back to the root, as pi's `SessionManager` opens it — is imported. Messages become
 * sessionfold messages (tool results joined to their calls), branch summaries and custom
 * messages user messages, and each compaction a segment boundary with its summary: the
 * imported session's model context is pi's.
 *
 * @example
 * ```ts
 * import { Sessions } from "sessionfold";
 * declare const bytes: Uint8Array;
 * declare const sessions: Sessions;
 *
 * const { session } = await readPi(bytes, "2026-01-01T00-00-00_ab12.jsonl");
 * await sessions.importPortable("a1/w1/from-pi", session);
 * ```
 * @throws {FormatError} at the file and line of the first invalid record (a tool result
 * with no call on its branch, an entry whose parent is not an earlier entry among them).
 * @throws {UnsupportedSchemaError} for a header version above 3.
 */
export async function readPi(source: JsonlSource, file: string): Promise<PiReadResult> {
  let header: PiHeader | undefined;
  const byId = new Map<string, PiEntry>();
  let last: PiEntry | undefined;
  let title: string | undefined;
  // Tool calls seen anywhere in the tree: a result naming none is refused at its own line
  // (the branch-exact join comes once the branch is known).
  const callIds = new Set<string>();
  const { diagnostics, lines } = await readJsonlStream(source, "pi", file, (record, line) => {
    if (header === undefined) {
      header = parsePiHeader(record);
      return;
    }
    const entry = parsePiEntry(record, line, header.version, `l${line}`, last?.id ?? null);
    if (byId.has(entry.id)) {
      record.field("id").fail("an id no earlier entry has", `${JSON.stringify(entry.id)}, the id of the entry on line ${byId.get(entry.id)!.line}`);
    }
    if (entry.parentId !== null && !byId.has(entry.parentId)) record.field("parentId").fail("the id of an earlier entry, or null");
    if (entry.kind === "tool-result" && !callIds.has(entry.callId)) {
      entry.at.fail("the id of an earlier toolCall", `${JSON.stringify(entry.callId)}, but no earlier toolCall has that id`);
    }
    if (entry.kind === "assistant") { for (const part of entry.parts) if (part.type === "tool") callIds.add(part.tool_call_id as string); }
    byId.set(entry.id, entry);
    last = entry;
    if (entry.kind === "name") title = entry.name;
  });
  if (header === undefined) {
    const found = diagnostics[0] ? "only an interrupted (unterminated, invalid) first line" : lines === 0 ? "an empty file" : "only blank lines";
    throw formatError({ format: "pi", file, line: diagnostics[0]?.line ?? 1 }, found, "a session header");
  }
  const branch: PiEntry[] = [];
  for (let entry = last; entry !== undefined; entry = entry.parentId === null ? undefined : byId.get(entry.parentId)) branch.push(entry);
  branch.reverse();
  const assembled = assemble(branch);
  const session: PortableSession = {
    sourceId: header.id,
    ...(title !== undefined ? { title } : {}),
    createdAt: header.timestamp,
    updatedAt: last?.timestamp ?? header.timestamp,
    ...(assembled.model !== undefined ? { modelLabel: assembled.model } : {}),
    cwd: header.cwd,
    messages: assembled.messages,
    ...(assembled.segments.length > 0 ? { segments: assembled.segments } : {}),
    ...(assembled.summary !== undefined ? { summary: assembled.summary } : {}),
    ...(assembled.compactions > 0
      ? { compaction: { completed: assembled.compactions, removed_messages: assembled.segments.at(-1)?.through ?? 0, removed_tokens_estimate: 0 } }
      : {}),
    format: `pi-v${header.version}`,
  };
  return { session, diagnostics, offBranchEntries: byId.size - branch.length };
}

interface Assembled {
  messages: MessageRecord[];
  segments: PortableSegment[];
  summary?: string;
  compactions: number;
  model?: string;
}

/** Turns the active branch into messages, joining tool results and placing compaction boundaries. */
function assemble(branch: readonly PiEntry[]): Assembled {
  const messages: MessageRecord[] = [];
  const segments: PortableSegment[] = [];
  const joiner = new ToolCallJoiner<PiToolPart>("toolCall");
  const messageIndexOf = new Map<string, number>();
  let summary: string | undefined;
  let compactions = 0;
  let model: string | undefined;
  for (const entry of branch) {
    switch (entry.kind) {
      case "user":
      case "assistant": {
        messageIndexOf.set(entry.id, messages.length);
        const parts = entry.parts.map((part, i) => withSequence(part, i + 1));
        for (const part of parts) if (part.type === "tool") joiner.call(part.tool_call_id, part as PiToolPart);
        messages.push({
          record_type: "message",
          sequence: messages.length + 1,
          message_id: `m_pi_${entry.id}`,
          role: entry.kind,
          created_at: entry.timestamp,
          ...(entry.kind === "assistant" ? { status: entry.status, provider: entry.provider, ...(entry.usage ? { usage: entry.usage } : {}) } : {}),
          parts,
          ...(entry.ext !== undefined ? { [PI_EXTENSION_FIELD]: entry.ext } : {}),
        });
        if (entry.kind === "assistant") model = entry.provider.model;
        break;
      }
      case "tool-result": {
        const [part] = joiner.take([{ id: entry.callId, at: entry.at }]);
        if (entry.isError) {
          part!.state = "output-error";
          part!.error = entry.error;
        } else {
          part!.state = "output-available";
          part!.output = entry.output;
        }
        part![PI_EXTENSION_FIELD] = { ...((part![PI_EXTENSION_FIELD] as object | undefined) ?? {}), result: { ...entry.ext, timestamp: entry.timestamp } };
        break;
      }
      case "compaction": {
        compactions += 1;
        summary = entry.summary;
        // pi keeps the messages from firstKeptEntryId on: everything before them is the segment.
        const kept = messageIndexOf.get(entry.firstKeptEntryId);
        const through = kept ?? messages.length;
        if (through > (segments.at(-1)?.through ?? 0) && entry.summary.length > 0) {
          segments.push({ through, summary: entry.summary, createdAt: entry.timestamp });
        }
        break;
      }
      case "model":
        model = entry.modelId;
        break;
      case "name":
      case "other":
        break;
    }
  }
  return { messages, segments, ...(summary !== undefined ? { summary } : {}), compactions, ...(model !== undefined ? { model } : {}) };
}

function withSequence(part: LoosePart, sequence: number): MessagePart {
  return { ...part, sequence } as MessagePart;
}
