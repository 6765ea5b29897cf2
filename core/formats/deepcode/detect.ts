import { InvalidInputError } from "../../errors.ts";
import { describeValue, formatError } from "../errors.ts";
import { decodeUtf8Strict } from "../json-text.ts";
import { classifyDeepCodeStream } from "./read.ts";
import type { DeepCodeDetection, DeepCodeFile } from "./types.ts";

const NAME = /^(.+?)(\.v1\.jsonl|\.meta\.json|\.jsonl)$/;

function baseName(name: string): string {
  return name.slice(name.lastIndexOf("/") + 1);
}

/**
 * Finds which DeepCode layout a session's files have (readers prefer v1, otherwise detect
 * either legacy layout; docs/FORMAT.md "Importing and exporting other systems' sessions"): `<id>.v1.jsonl` is `v1` (legacy files beside it
 * are ignored); otherwise `<id>.jsonl` is `desktop-v0` when its first line is a
 * `session_meta` header without `schema_version` (`v1` with it), and `core-v0` when a
 * `<id>.meta.json` lies beside it. The result
 * is the input {@linkcode readDeepCode} takes. Nothing is read beyond the first line.
 *
 * @param files the folder's files (other names are ignored).
 * @param id which session, when the files hold more than one.
 * @example
 * ```ts
 * import { readDeepCode } from "sessionfold";
 *
 * declare const bytes: Uint8Array;
 * declare const meta: Uint8Array;
 * const found = detectDeepCodeLayout([{ name: "abc.jsonl", bytes }, { name: "abc.meta.json", bytes: meta }]);
 * found.layout; // "core-v0"
 * const { session } = readDeepCode(found);
 * ```
 * @throws {InvalidInputError} when no session (or, without `id`, more than one) is among the files.
 * @throws {FormatError} when `<id>.jsonl` has neither a `session_meta` header nor a `meta.json` beside it.
 */
export function detectDeepCodeLayout(files: readonly DeepCodeFile[], id?: string): DeepCodeDetection {
  const byId = new Map<string, { v1?: DeepCodeFile; legacy?: DeepCodeFile; meta?: DeepCodeFile }>();
  for (const file of files) {
    const match = NAME.exec(baseName(file.name));
    if (!match) continue;
    const [, sessionId, suffix] = match as unknown as [string, string, string];
    const entry = byId.get(sessionId) ?? {};
    if (suffix === ".v1.jsonl") entry.v1 = file;
    else if (suffix === ".meta.json") entry.meta = file;
    else entry.legacy = file;
    byId.set(sessionId, entry);
  }
  const ids = [...byId.keys()].sort();
  if (id === undefined) {
    if (ids.length !== 1) {
      const found = ids.length === 0 ? "no <id>.v1.jsonl, <id>.jsonl or <id>.meta.json" : `sessions ${ids.join(", ")}`;
      throw new InvalidInputError(`found ${found}; expected the files of one DeepCode session (or pass its id)`, { ids });
    }
    id = ids[0]!;
  }
  const entry = byId.get(id);
  if (entry?.v1) return { layout: "v1", id, file: entry.v1.name, bytes: entry.v1.bytes };
  if (!entry?.legacy) {
    throw new InvalidInputError(`found no ${id}.v1.jsonl or ${id}.jsonl; expected a DeepCode session stream`, { id, ids });
  }
  const stream = entry.legacy;
  const layout = classifyDeepCodeStream(stream.bytes, entry.meta !== undefined);
  if (layout === "desktop-v0" || layout === "v1") return { layout, id, file: stream.name, bytes: stream.bytes };
  if (layout === "core-v0" && entry.meta) return { layout, id, file: stream.name, bytes: stream.bytes, metaBytes: entry.meta.bytes, metaFile: entry.meta.name };
  throw formatError(
    { format: "deepcode", file: stream.name, line: 1 },
    describeFirstLine(stream.bytes),
    `a session_meta header (desktop-v0) or a ${id}.meta.json beside the stream (core-v0)`,
  );
}

function describeFirstLine(bytes: Uint8Array): string {
  const end = bytes.indexOf(0x0a);
  const decoded = decodeUtf8Strict(bytes.subarray(0, end === -1 ? bytes.length : end));
  if (!decoded.ok) return "bytes that are not UTF-8";
  if (decoded.text.trim() === "") return bytes.length === 0 ? "an empty file" : "a blank first line";
  try {
    const value: unknown = JSON.parse(decoded.text);
    const type = typeof value === "object" && value !== null && !Array.isArray(value) ? (value as { type?: unknown }).type : undefined;
    return type === undefined ? `${describeValue(value)} without a type` : `a record of type ${describeValue(type)}`;
  } catch {
    return "invalid JSON";
  }
}
