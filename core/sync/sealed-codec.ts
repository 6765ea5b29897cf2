/**
 * The device side of an end-to-end encrypted session's sync (docs/SYNC.md "End-to-end
 * encrypted sessions"): what the engine sends is sealed on this device, for the place the
 * server stores it (each message for `messages/active.jsonl` of its session, segments and
 * documents as this store holds them), and what it receives is opened here, with the
 * `keys.json` that came with it, before it goes through this store's own commit path (which
 * seals it again for this store). The server never sees a key or a plaintext byte.
 *
 * @module
 */
import { CorruptSessionError } from "../errors.ts";
import type { EncryptedStorage } from "../encryption/encrypted-storage.ts";
import { SESSION_KEYS_FILE } from "../encryption/places.ts";
import { decodeJsonl } from "../jsonl/decode.ts";
import { formatSessionRef, type SessionRef } from "../layout/ids.ts";
import { sessionPaths } from "../layout/paths.ts";
import { messageCheck, type MessageRecord, parseMetaJson, type SessionMeta } from "../schema/records.ts";
import { BATCH_FIELD } from "../session/batch.ts";
import type { Session } from "../session/session.ts";
import type { Mutation, SealedDocuments, SealedRecord, SegmentFile } from "./protocol.ts";
import { sealedLineOf, sealedSegmentMessages } from "./sealed-files.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The message ids and sequences a sealed mutation carries, read from the clear (nothing is opened). */
export function sealedMessagesOf(mutation: Mutation): { sequence: number; message_id: string }[] {
  if (mutation.op === "create_sealed") {
    return [
      ...mutation.segments.flatMap((segment) => sealedSegmentMessages(mutation.ref, segment)),
      ...mutation.lines.map((line, i) => sealedLineOf(line, `${mutation.ref}: lines.${i}`)),
    ];
  }
  if (mutation.op === "append_sealed") return mutation.lines.map((line, i) => sealedLineOf(line, `${mutation.ref}: lines.${i}`));
  return [];
}

/** Seals and opens an encrypted store's sessions for sync. */
export class SealedCodec {
  readonly #storage: EncryptedStorage;

  constructor(storage: EncryptedStorage) {
    this.#storage = storage;
  }

  /** The session's `keys.json` as stored (wrapped keys, in the clear). */
  async keys(session: Session): Promise<string> {
    const bytes = await this.#storage.inner.read(`${session.paths.dir}/${SESSION_KEYS_FILE}`);
    if (!bytes) throw new CorruptSessionError(`${session.paths.dir}: an encrypted session without ${SESSION_KEYS_FILE}`, { file: session.paths.dir });
    return decoder.decode(bytes);
  }

  /** A file of the session as stored (sealed), or `null` when there is none. */
  async stored(path: string): Promise<string | null> {
    const bytes = await this.#storage.inner.read(path);
    return bytes ? decoder.decode(bytes) : null;
  }

  /** `meta.json` and `instruction.md` as stored. */
  async documents(session: Session): Promise<SealedDocuments> {
    return { meta: (await this.stored(session.paths.meta)) ?? "", instruction: await this.stored(session.paths.instruction) };
  }

  /** Each message sealed for `messages/active.jsonl` of its session, as the server appends it. */
  async sealActive(session: Session, messages: readonly MessageRecord[]): Promise<string[]> {
    if (messages.length === 0) return [];
    const plaintext = messages.map((m) => {
      const { [BATCH_FIELD]: _batch, ...record } = m as MessageRecord & { [BATCH_FIELD]?: unknown };
      return `${JSON.stringify(record)}\n`;
    });
    const sealed = decoder.decode(await this.#storage.sealStored(session.paths.active, encoder.encode(plaintext.join(""))));
    return sealed.split("\n").slice(0, -1);
  }

  /**
   * The messages of records the server sent for the history after `after`, opened where they
   * were sealed (their file of session `ref`) with `keys`; their sequences (authenticated)
   * must follow `after` without a gap.
   *
   * @throws {CorruptSessionError} when one does not open, is not a message or is not the next sequence.
   */
  async openRecords(ref: SessionRef, keys: string, records: readonly SealedRecord[], after: number): Promise<MessageRecord[]> {
    const out: MessageRecord[] = [];
    for (let i = 0; i < records.length;) {
      const file = records[i]!.file;
      let j = i;
      while (j < records.length && records[j]!.file === file) j++;
      const path = `${sessionPaths(ref).dir}/${file}`;
      const text = records.slice(i, j).map((r) => `${r.line}\n`).join("");
      const opened = await this.#storage.openStored(path, encoder.encode(text), { keys, whole: false });
      const decoded = decodeJsonl<MessageRecord>(opened, { file: path, schemas: { message: messageCheck }, tornTailRecoverable: false });
      const bad = decoded.diagnostics.find((d) => d.fatal);
      if (bad || decoded.records.length !== j - i) {
        throw new CorruptSessionError(`${path}: ${bad?.message ?? "a record that is not a message"}`, { file: path, line: null });
      }
      out.push(...decoded.records.map((r) => r.record));
      i = j;
    }
    const gap = out.findIndex((m, k) => m.sequence !== after + 1 + k);
    if (gap !== -1) {
      throw new CorruptSessionError(`${formatSessionRef(ref)}: the server sent sequence ${out[gap]!.sequence} where ${after + 1 + gap} belongs`, {
        file: formatSessionRef(ref),
        line: null,
      });
    }
    return out;
  }

  /** A segment file the server sent, opened whole (its order and footer checked): the plaintext text. */
  async openSegment(ref: SessionRef, keys: string, segment: SegmentFile): Promise<SegmentFile> {
    const path = `${sessionPaths(ref).segmentsDir}/${segment.name}`;
    return { name: segment.name, text: decoder.decode(await this.#storage.openStored(path, encoder.encode(segment.text), { keys, whole: true })) };
  }

  /** The sealed documents the server sent, opened: `meta.json` and the instruction. */
  async openDocuments(ref: SessionRef, keys: string, documents: SealedDocuments): Promise<{ meta: SessionMeta; instruction: string | null }> {
    const paths = sessionPaths(ref);
    const meta = parseMetaJson(await this.#storage.openStored(paths.meta, encoder.encode(documents.meta), { keys, whole: true }), paths.meta);
    const instruction = documents.instruction === null
      ? null
      : decoder.decode(await this.#storage.openStored(paths.instruction, encoder.encode(documents.instruction), { keys, whole: true }));
    return { meta, instruction };
  }
}
