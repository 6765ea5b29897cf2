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
  // Only the first line must be UTF-8: a bad byte further on is the reader's to report, with its line.
  const first = firstLine(head);
  if (first === undefined) return undefined;
  const decoded = decodeUtf8Strict(cutAtCharacter(first.bytes));
  if (!decoded.ok) return undefined;
  const line = decoded.text.replace(/^\uFEFF/, "");
  const text = lenientUtf8.decode(cutAtCharacter(head));
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
    if (r.payload !== undefined && typeof r.timestamp === "string") {
      return { format: "codex", reason: 'first line is a {timestamp, type:"session_meta", payload} rollout line' };
    }
    return { format: "deepcode", reason: 'first line is a DeepCode {type:"session_meta"} header' };
  }
  if ((typeof r.uuid === "string" && typeof r.sessionId === "string") || (r.type === "summary" && "leafUuid" in r) || r.type === "file-history-snapshot") {
    return { format: "claude-code", reason: "first line is a transcript record with uuid / sessionId" };
  }
  if (typeof r.role === "string" && "content" in r) return { format: "deepcode", reason: "first line is a bare {role, content} message (core-v0)" };
  if ("schema_version" in r && Array.isArray(r.history)) return { format: "rho-snapshot", reason: "a one-line JSON document with schema_version and history" };
  return undefined;
}

const lenientUtf8 = new TextDecoder("utf-8");

/**
 * The first line of `head` that is not blank (spaces, tabs, `\r`), with its 1-based number;
 * `undefined` when there is none.
 *
 * @example
 * ```ts
 * firstLine(new TextEncoder().encode("\n{}\n"))?.line; // 2
 * ```
 */
export function firstLine(head: Uint8Array): { bytes: Uint8Array; line: number } | undefined {
  let start = 0;
  for (let line = 1; start < head.length; line += 1) {
    const newline = head.indexOf(0x0a, start);
    const end = newline === -1 ? head.length : newline;
    const bytes = head.subarray(start, end);
    if (bytes.some((byte) => byte !== 0x20 && byte !== 0x09 && byte !== 0x0d)) return { bytes, line };
    start = end + 1;
  }
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
