/**
 * Shared builders of the export tests: a PortableSession with one part of every type, and
 * helpers to look inside exported bytes (every JSON string, base64 file data decoded).
 * Not a test file itself.
 */
import type { MessagePart, MessageRecord, PortableSession } from "../../core/mod.ts";

export const TS = "2026-12-02T13:00:00.000Z";

/** UTF-8 text as base64 (what a text file part's `data` holds). */
export function base64Of(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** base64 back to UTF-8 text, or undefined when it is not base64 of valid UTF-8. */
export function textOfBase64(data: string): string | undefined {
  try {
    const binary = atob(data);
    const bytes = Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** A tiny valid PNG (1×1), as base64: binary data that redaction cannot look into. */
export const PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg==";

/** Field texts of {@linkcode sessionWith}; each defaults to a plain marker. */
export interface SessionTexts {
  system: string;
  title: string;
  modelLabel: string;
  summary: string;
  metadataValue: string;
  promptCacheKey: string;
  cwd: string;
  userText: string;
  assistantText: string;
  reasoning: string;
  reasoningSummary: string;
  toolInput: string;
  toolOutput: string;
  toolError: string;
  fileName: string;
  fileUrl: string;
  fileText: string;
  providerContext: string;
  extension: string;
}

export const MARKERS: SessionTexts = {
  system: "SYSTEM-MARKER you are a helpful agent",
  title: "TITLE-MARKER",
  modelLabel: "MODEL-LABEL-MARKER",
  summary: "SUMMARY-MARKER earlier we discussed",
  metadataValue: "METADATA-MARKER",
  promptCacheKey: "CACHE-KEY-MARKER",
  cwd: "/work/CWD-MARKER",
  userText: "USER-TEXT-MARKER please read the file",
  assistantText: "ASSISTANT-TEXT-MARKER here it is",
  reasoning: "REASONING-MARKER thinking hard",
  reasoningSummary: "REASONING-SUMMARY-MARKER thought about it",
  toolInput: "TOOL-INPUT-MARKER",
  toolOutput: "TOOL-OUTPUT-MARKER file contents",
  toolError: "TOOL-ERROR-MARKER permission denied",
  fileName: "FILE-NAME-MARKER.txt",
  fileUrl: "https://files.example.com/FILE-URL-MARKER.txt",
  fileText: "FILE-DATA-MARKER inside the file",
  providerContext: "PROVIDER-CONTEXT-MARKER opaque",
  extension: "EXTENSION-MARKER",
};

/**
 * A session with a part of every type in its messages: user text + text file + image,
 * an assistant step with reasoning, summary, a successful and a failed tool call, a
 * url-only file and provider context, a final assistant answer, and a Rho mid-history
 * system message. `texts` overrides the markers.
 */
export function sessionWith(overrides: Partial<SessionTexts> = {}): PortableSession {
  const t = { ...MARKERS, ...overrides };
  const provider = { provider: "openai", api: "responses", model: "gpt-5" };
  const user: MessageRecord = {
    record_type: "message",
    sequence: 1,
    message_id: "m_user",
    role: "user",
    created_at: TS,
    parts: [
      { sequence: 1, type: "text", text: t.userText },
      { sequence: 2, type: "file", media_type: "text/plain", name: t.fileName, data: base64Of(t.fileText) },
      { sequence: 3, type: "file", media_type: "image/png", name: "pixel.png", data: PNG_1X1 },
    ],
  };
  const step: MessageRecord = {
    record_type: "message",
    sequence: 2,
    message_id: "m_step",
    role: "assistant",
    created_at: TS,
    status: "completed",
    provider,
    usage: { input_tokens: 900, output_tokens: 120, total_tokens: 1020 },
    parts: [
      { sequence: 1, type: "reasoning", text: t.reasoning },
      { sequence: 2, type: "reasoning-summary", text: t.reasoningSummary },
      {
        sequence: 3,
        type: "tool",
        tool_call_id: "call_1",
        tool_name: "read",
        state: "output-available",
        input: { path: "notes.txt", options: { note: t.toolInput, list: [t.toolInput] } },
        output: { content: t.toolOutput, nested: [{ text: t.toolOutput }] },
      },
      { sequence: 4, type: "tool", tool_call_id: "call_2", tool_name: "bash", state: "output-error", input: { command: t.toolInput }, error: t.toolError },
      { sequence: 5, type: "file", media_type: "text/plain", name: t.fileName, url: t.fileUrl },
      { sequence: 6, type: "provider-context", ...provider, data: { encrypted: t.providerContext, items: [{ note: t.providerContext }] } },
    ] as MessagePart[],
    rho: { portable_fallback: t.extension },
  } as MessageRecord;
  const answer: MessageRecord = {
    record_type: "message",
    sequence: 3,
    message_id: "m_answer",
    role: "assistant",
    created_at: TS,
    status: "completed",
    provider,
    parts: [
      { sequence: 1, type: "text", text: t.assistantText },
      { sequence: 2, type: "file", media_type: "image/png", name: "chart.png", data: PNG_1X1 },
    ],
  };
  const laterSystem = {
    record_type: "message",
    sequence: 4,
    message_id: "m_system",
    role: "user",
    created_at: TS,
    parts: [{ sequence: 1, type: "text", text: `${t.system} (after reset)` }],
    rho: { entry: "System" },
  } as MessageRecord;
  return {
    sourceId: "s1",
    title: t.title,
    createdAt: TS,
    updatedAt: TS,
    modelLabel: t.modelLabel,
    revision: 7,
    system: t.system,
    messages: [user, step, answer, laterSystem],
    summary: t.summary,
    provider,
    compaction: { completed: 1, removed_messages: 4, removed_tokens_estimate: 1000 },
    metadata: { project: t.metadataValue, note: t.metadataValue },
    promptCacheKey: t.promptCacheKey,
    cwd: t.cwd,
    format: "sessionfold",
  };
}

/** Every string inside a JSON value (keys included), depth-first. */
export function stringsOf(value: unknown, out: string[] = []): string[] {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) { for (const item of value) stringsOf(item, out); }
  else if (value !== null && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      out.push(key);
      stringsOf(item, out);
    }
  }
  return out;
}

/**
 * What a recipient can read in exported bytes: the raw text, every JSON string of every
 * JSON document or line in it (escapes undone), JSON nested inside those strings, and
 * every string that is base64 of UTF-8 text, decoded.
 */
export function readableViews(bytes: Uint8Array | string): string[] {
  const raw = typeof bytes === "string" ? bytes : new TextDecoder().decode(bytes);
  const views = [raw];
  const documents: unknown[] = [];
  try {
    documents.push(JSON.parse(raw));
  } catch {
    for (const line of raw.split("\n")) {
      if (line.trim() === "") continue;
      try {
        documents.push(JSON.parse(line));
      } catch {
        // not JSON: the raw view covers it
      }
    }
  }
  const strings = stringsOf(documents);
  for (const s of strings) {
    views.push(s);
    if (/^[\s]*[[{]/.test(s)) {
      try {
        for (const inner of stringsOf(JSON.parse(s))) views.push(inner);
      } catch {
        // not JSON
      }
    }
    const payload = s.startsWith("data:") ? s.slice(s.indexOf(",") + 1) : s;
    if (payload.length >= 8 && /^[A-Za-z0-9+/=\s_-]+$/.test(payload)) {
      const decoded = textOfBase64(payload.replace(/-/g, "+").replace(/_/g, "/"));
      if (decoded !== undefined) views.push(decoded);
    }
  }
  return views;
}

/** Deep-freezes a value so any mutation throws (tests run as strict ES modules). */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const item of Object.values(value)) deepFreeze(item);
  }
  return value;
}
