/**
 * A session as the format-neutral {@linkcode PortableSession} exporters take: every
 * segment's messages then Active, the system text, the latest summary and `meta.json`'s
 * fields. The mapping from the session's files to the portable contract lives here, beside
 * nothing else: `formats/` writes other systems' files from the contract alone.
 *
 * @module
 */
import { CorruptSessionError, RevisionConflictError } from "../errors.ts";
import { formatSessionRef } from "../layout/ids.ts";
import type { PortableSegment, PortableSession } from "../model/mod.ts";
import { cumulativeSummary, type MessageRecord, metaRevisionOf, type SessionMeta } from "../schema/records.ts";
import { publicRecord } from "./batch.ts";
import { readSegment, segmentRanges } from "./read-view.ts";
import type { CommitPath } from "./commit-path.ts";

/** Options of `Session.exportPortable`. */
export interface ExportPortableOptions {
  /** Called after each segment and once at the end with `(done, total)` files read. */
  readonly onProgress?: (done: number, total: number) => void;
}

/**
 * Reads the whole session afresh and maps it. Read-only (no lock is written); a commit by
 * another writer during the read is detected by the revision and refused rather than
 * exported half-old, half-new.
 *
 * @throws {CorruptSessionError} naming file and line when the session or a segment has an invalid line.
 * @throws {RevisionConflictError} when another writer committed while it was read.
 */
export async function exportSession(tx: CommitPath, system: () => string | null, options: ExportPortableOptions = {}): Promise<PortableSession> {
  const { onProgress } = options;
  await tx.reload();
  const fatal = tx.state.diagnostics.find((d) => d.fatal);
  if (fatal) throw new CorruptSessionError(`${formatSessionRef(tx.ref)} cannot be exported: ${fatal.message}`, { file: fatal.file, line: fatal.line });
  const source = { storage: tx.ctx.storage, paths: tx.paths, state: tx.state };
  const revision = tx.state.meta.revision;
  const messages: MessageRecord[] = [];
  const boundaries: PortableSegment[] = [];
  const segments = await segmentRanges(source);
  for (const [i, range] of segments.entries()) {
    const { messages: closed, footer } = await readSegment(source, range);
    for (const message of closed) messages.push(message);
    const text = cumulativeSummary(footer);
    if (footer && text !== null) boundaries.push({ through: messages.length, summary: text, createdAt: footer.created_at });
    onProgress?.(i + 1, segments.length + 1);
  }
  for (const message of tx.state.active) messages.push(publicRecord(message));
  const found = metaRevisionOf(await tx.ctx.storage.read(tx.paths.meta));
  if (found !== tx.state.diskRevision) {
    throw new RevisionConflictError(`${formatSessionRef(tx.ref)} changed while it was exported (revision ${revision} → ${found ?? "none"}); export again`, {
      expected: revision,
      found: found ?? null,
    });
  }
  onProgress?.(segments.length + 1, segments.length + 1);
  const meta = tx.state.meta as SessionMeta & {
    metadata?: Record<string, string>;
    prompt_cache_key?: string;
    imported_from?: { cwd?: string; session_id?: string; updated_at?: string };
  };
  // docs/FORMAT.md: meta.json's provider, else the newest assistant message's.
  const provider = meta.provider ?? messages.findLast((m) => m.role === "assistant" && m.provider)?.provider;
  const newest = messages.at(-1)?.created_at;
  const sourceUpdatedAt = meta.imported_from?.updated_at;
  // An imported session with no message newer than its source's own updatedAt gives that time back.
  const updatedAt = typeof sourceUpdatedAt === "string" && (newest === undefined || Date.parse(newest) <= Date.parse(sourceUpdatedAt))
    ? sourceUpdatedAt
    : meta.updated_at;
  const summary = cumulativeSummary(tx.state.footer);
  return {
    // An imported session goes back out under its source's id (a round trip keeps it).
    sourceId: typeof meta.imported_from?.session_id === "string" ? meta.imported_from.session_id : tx.ref.sessionId,
    ...(meta.title !== undefined ? { title: meta.title } : {}),
    createdAt: meta.created_at,
    updatedAt,
    ...(meta.model_label !== undefined ? { modelLabel: meta.model_label } : {}),
    revision,
    system: system(),
    messages,
    ...(summary !== null ? { summary } : {}),
    ...(boundaries.length > 0 ? { segments: boundaries } : {}),
    ...(provider ? { provider } : {}),
    ...(meta.compaction ? { compaction: meta.compaction } : {}),
    ...(meta.metadata && typeof meta.metadata === "object" ? { metadata: meta.metadata } : {}),
    ...(typeof meta.prompt_cache_key === "string" ? { promptCacheKey: meta.prompt_cache_key } : {}),
    ...(typeof meta.imported_from?.cwd === "string" ? { cwd: meta.imported_from.cwd } : {}),
    format: "sessionfold",
  };
}
