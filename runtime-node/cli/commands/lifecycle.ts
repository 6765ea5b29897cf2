/**
 * The commands that move, free or delete a whole session: `fork`, `archive`, `delete`, `unlock`.
 *
 * @module
 */
import { assertId, formatSessionRef, type LockOwner, NotFoundError, sessionPaths, type SessionPlace, WriterLockedError } from "../../../core/mod.ts";
import { counted } from "../format.ts";
import { type Command, refArg, stringOption } from "../command.ts";
import { UsageError } from "../exit.ts";
import { describeLockOwner } from "../../../core/internal.ts";
import { Progress } from "../io.ts";
import { exists, explainOpenError } from "../store.ts";
import { escapedExcerpt } from "../../../core/internal.ts";

/** `sessionfold fork`: copy the full history into a new session. Its `help` says what it prints. */
export const fork: Command = {
  help: [
    "Copies every segment, Active and instruction.md into a new session of the same",
    "workspace, sequences kept and forked_from set; built aside and moved into place in",
    "one step. Reads the whole history (a progress bar on a terminal).",
    "--json: the new meta.",
  ].join("\n"),
  spec: { positionals: ["REF"], options: { as: { type: "string", value: "SESSION_ID", description: "the new session's id" } } },
  async run({ store, out, io, args }) {
    const ref = refArg(args);
    const target = stringOption(args, "as");
    if (target === undefined) throw new UsageError("fork: missing --as SESSION_ID", { option: "--as" });
    assertId("session_id", target);
    const opened = await store.holding(ref);
    const progress = new Progress(io, "fork");
    let forked;
    try {
      forked = await opened.sessions.fork(ref, target, { onProgress: (done, total) => progress.update(done, total) });
    } catch (error) {
      throw await explainOpenError(opened.storage, ref, error, true);
    } finally {
      progress.end();
    }
    const meta = forked.meta;
    return out.result(
      meta,
      () => `forked ${formatSessionRef(ref)} -> ${formatSessionRef(forked.ref)} (${counted(meta.message_count, "message")}, revision ${meta.revision})`,
    );
  },
};

/** `sessionfold archive`: move the session to archived-sessions/. Its `help` says what it prints. */
export const archive: Command = {
  help: ["Moves the whole session to archived-sessions/ in one step, under its lock.", "Archived sessions are read-only.", "--json: the archived meta."].join(
    "\n",
  ),
  spec: { positionals: ["REF"], options: {} },
  async run({ store, out, args }) {
    const ref = refArg(args);
    const opened = await store.holding(ref);
    const meta = await opened.sessions.archive(ref).catch(async (error: unknown) => {
      throw await explainOpenError(opened.storage, ref, error, true);
    });
    return out.result(meta, () => `archived ${formatSessionRef(ref)}`);
  },
};

/** `sessionfold delete`: delete one session and its whole history. Its `help` says what it prints. */
export const deleteCommand: Command = {
  help: [
    "Deletes the session and its whole history, explicit and final: every file of its folder,",
    "live and archived (only the archived copy with --archived), under its lock; refused",
    "while another writer holds it (nothing removed). On an encrypted store its data keys go",
    "first. --json: {ref, places, removed: [paths]}.",
  ].join("\n"),
  spec: { positionals: ["REF"], options: { archived: { type: "boolean", description: "delete only the archived copy" } } },
  async run({ store, out, args }) {
    const ref = refArg(args);
    const opened = await store.holding(ref);
    const deleted = await opened.sessions.delete(ref, args.options["archived"] === true ? { archived: true } : {}).catch(async (error: unknown) => {
      throw await explainOpenError(opened.storage, ref, error, true);
    });
    return out.result(deleted, () => `deleted ${formatSessionRef(ref)} (${deleted.places.join(" and ")}: ${counted(deleted.removed.length, "file")})`);
  },
};

/** `sessionfold unlock`: remove a writer lock after printing its owner. Its `help` says what it prints. */
export const unlock: Command = {
  help: [
    "Removes the session's writer.lock, left by a writer that stopped without removing it.",
    "Nobody else ever deletes another owner's lock: --force says you checked that its owner",
    "(printed first, on stderr) is gone. Exits 4 when there is no lock.",
    "--json: the removed lock content.",
  ].join("\n"),
  spec: { positionals: ["REF"], options: { force: { type: "boolean", description: "confirm removing another owner's lock" } } },
  async run({ store, out, args }) {
    if (args.options["force"] !== true) {
      throw new UsageError("unlock: removing a writer lock needs --force (check first that its owner is no longer running)", { option: "--force" });
    }
    const ref = refArg(args);
    const opened = await store.holding(ref);
    const { storage } = opened;
    const place: SessionPlace | undefined = (await exists(storage, ref, false)) ? "live" : (await exists(storage, ref, true)) ? "archived" : undefined;
    if (!place) throw new NotFoundError(`no session ${formatSessionRef(ref)}`, { ref: formatSessionRef(ref) });
    const path = sessionPaths(ref, place).lock;
    const bytes = await storage.read(path);
    if (bytes === undefined) {
      throw new NotFoundError(`${path}: ${formatSessionRef(ref)} has no writer.lock; nothing to remove`, { ref: formatSessionRef(ref), path });
    }
    const text = new TextDecoder().decode(bytes);
    const content = parseLock(text);
    if (!out.json) {
      out.note(
        `writer.lock of ${formatSessionRef(ref)}: ${
          typeof content === "object" && content !== null ? describeLockOwner(content as Partial<LockOwner>) : `unreadable content ${escapedExcerpt(text)}`
        }`,
      );
    }
    // The lock must still be the one shown: never remove a lock its owner just replaced.
    const again = await storage.read(path);
    if (again === undefined || new TextDecoder().decode(again) !== text) {
      throw new WriterLockedError(`${path}: the lock changed while unlocking; nothing was removed (run unlock again to see the new owner)`, { path });
    }
    await storage.remove(path);
    return out.result(content, () => `removed ${path}`);
  },
};

/** The lock's JSON when it is JSON, else its text. */
function parseLock(text: string): Record<string, unknown> | string {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : text;
  } catch {
    return text;
  }
}
