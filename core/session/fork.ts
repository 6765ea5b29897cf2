/**
 * The copy a fork makes (`Sessions.fork`): every segment (each decoded whole first: a fork
 * never copies a corrupt line), Active and `instruction.md` into a staged folder, with a
 * `meta.json` that names the source in `forked_from`. The caller holds the source's lock
 * and installs the staged folder.
 *
 * @module
 */
import { CorruptSessionError } from "../errors.ts";
import { decodeJsonl } from "../jsonl/decode.ts";
import { formatSessionRef } from "../layout/ids.ts";
import { relativeToSession } from "../layout/paths.ts";
import { nowTimestamp, type SessionMeta } from "../schema/records.ts";
import type { StoragePort } from "../storage/port.ts";
import { SEGMENT_RECORDS } from "./segment-rules.ts";
import type { Session } from "./session.ts";
import type { Staging } from "./staging.ts";
import { lastSequence } from "./state.ts";

/**
 * Writes the fork of `from` (freshly reloaded under its lock) into `staging` and returns
 * its `meta.json` (not written: installing the folder writes it last).
 *
 * @throws {CorruptSessionError} when a source segment has an invalid line (named by file and line).
 */
export async function copyForFork(
  storage: StoragePort,
  clock: () => number,
  from: Session,
  staging: Staging,
  onProgress?: (done: number, total: number) => void,
): Promise<{ meta: SessionMeta; total: number }> {
  const fromPaths = from.paths;
  let historyBytes = 0;
  const segments = await from.segments();
  const total = segments.length + 1;
  for (const [i, range] of segments.entries()) {
    const bytes = (await storage.read(fromPaths.segment(range))) ?? new Uint8Array(0);
    const file = relativeToSession(fromPaths, fromPaths.segment(range));
    const result = decodeJsonl(bytes, { file, schemas: SEGMENT_RECORDS, tornTailRecoverable: false });
    const bad = result.diagnostics.find((d) => d.fatal);
    if (bad) throw new CorruptSessionError(`cannot fork ${formatSessionRef(from.ref)}: ${bad.message}`, { file, line: bad.line });
    await storage.replace(staging.paths.segment(range), bytes);
    historyBytes += bytes.length;
    onProgress?.(i + 1, total);
  }
  const activeBytes = new TextEncoder().encode(from.active.map((m) => `${JSON.stringify(m)}\n`).join(""));
  if (activeBytes.length > 0) await storage.replace(staging.paths.active, activeBytes);
  historyBytes += activeBytes.length;
  const instruction = await storage.read(fromPaths.instruction);
  if (instruction) await storage.replace(staging.paths.instruction, instruction);
  const now = nowTimestamp(clock);
  // A fork is a new session: it keeps the history's accounting, not the import record.
  const { imported_from: _importedFrom, ...inherited } = from.meta as SessionMeta & { imported_from?: unknown };
  const meta: SessionMeta = {
    ...inherited,
    session_id: staging.target.sessionId,
    created_at: now,
    updated_at: now,
    history_bytes: historyBytes,
    message_count: lastSequence({ newest: from.newestSegment, active: [...from.active] }),
    forked_from: { session_id: from.ref.sessionId, through_sequence: lastSequence({ newest: from.newestSegment, active: [...from.active] }) },
  };
  return { meta, total };
}
