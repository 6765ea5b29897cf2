import { decodeUtf8Strict } from "./json-text.ts";

/** The session formats {@linkcode detectSessionFormat} tells apart. */
export type DetectedFormat = "pi" | "codex" | "claude-code" | "deepcode" | "rho-jsonl" | "rho-snapshot";

/** What {@linkcode detectSessionFormat} found and the evidence it went by. */
export interface FormatDetection {
  readonly format: DetectedFormat;
  /** The evidence, e.g. `first line is a {type:"session"} header with an ISO-8601 timestamp`. */
  readonly reason: string;
}

const ISO = /^\d{4}-\d{2}-\d{2}T/;

/**
 * Tells which agent wrote a session file from its first non-blank line (give it at least
 * the file's first line; 64 KiB is plenty). Returns `undefined` when nothing matches: the
 * caller then asks for the format instead of guessing.
 *
 * - pi: `{"type":"session", …, "timestamp": ISO-8601}`; Rho's app JSONL has the same
 *   header with Unix seconds (`"timestamp":"1764680400"`);
 * - Codex: `{"timestamp", "type":"session_meta", "payload":{…}}`; DeepCode: a
 *   `session_meta` record without `payload`, or a bare `{role, content}` message (core-v0);
 * - Claude Code: a record with `uuid` and `sessionId`, or a `summary` / `file-history-snapshot` record;
 * - a Rho snapshot: a JSON document (its first line alone is not JSON) mentioning `history`.
 *
 * @example
 * ```ts
 * const firstBytes = new TextEncoder().encode('{"timestamp":"2025-09-10T12:00:00.000Z","type":"session_meta","payload":{"id":"5f2c"}}\n');
 * detectSessionFormat(firstBytes); // { format: "codex", reason: "…" }
 * ```
 */
export function detectSessionFormat(head: Uint8Array): FormatDetection | undefined {
  const decoded = decodeUtf8Strict(cutAtCharacter(head));
  if (!decoded.ok) return undefined;
  const text = decoded.text.replace(/^\uFEFF/, "");
  const line = text.split("\n").find((l) => l.trim() !== "");
  if (line === undefined) return undefined;
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    return line.trim() === "{" && /"history"\s*:/.test(text) ? { format: "rho-snapshot", reason: "a multi-line JSON document with a history" } : undefined;
  }
  if (record === null || typeof record !== "object" || Array.isArray(record)) return undefined;
  const r = record as Record<string, unknown>;
  if (r.type === "session" && typeof r.timestamp === "string") {
    if (ISO.test(r.timestamp)) return { format: "pi", reason: 'first line is a {type:"session"} header with an ISO-8601 timestamp' };
    if (/^\d+$/.test(r.timestamp)) return { format: "rho-jsonl", reason: 'first line is a {type:"session"} header with a Unix-seconds timestamp' };
  }
  if (r.type === "session_meta") {
    if (r.payload !== undefined && typeof r.timestamp === "string") return { format: "codex", reason: 'first line is a {timestamp, type:"session_meta", payload} rollout line' };
    return { format: "deepcode", reason: 'first line is a DeepCode {type:"session_meta"} header' };
  }
  if ((typeof r.uuid === "string" && typeof r.sessionId === "string") || (r.type === "summary" && "leafUuid" in r) || r.type === "file-history-snapshot") {
    return { format: "claude-code", reason: "first line is a transcript record with uuid / sessionId" };
  }
  if (typeof r.role === "string" && "content" in r) return { format: "deepcode", reason: "first line is a bare {role, content} message (core-v0)" };
  if ("schema_version" in r && Array.isArray(r.history)) return { format: "rho-snapshot", reason: "a one-line JSON document with schema_version and history" };
  return undefined;
}

/** The head without a UTF-8 sequence cut at its end (a head is usually a prefix of the file). */
function cutAtCharacter(head: Uint8Array): Uint8Array {
  let lead = head.length - 1;
  while (lead >= 0 && head.length - lead <= 4 && (head[lead]! & 0xc0) === 0x80) lead -= 1;
  if (lead < 0 || head[lead]! < 0xc0) return head;
  const expected = head[lead]! >= 0xf0 ? 4 : head[lead]! >= 0xe0 ? 3 : 2;
  return head.length - lead < expected ? head.subarray(0, lead) : head;
}
