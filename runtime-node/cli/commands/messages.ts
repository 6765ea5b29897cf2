/**
 * `messages REF [--before SEQ]`: Active, or the newest whole segment whose end is below
 * SEQ. Exits 4 (`corrupt`) when a fatal diagnostic touches the file it reads.
 *
 * @module
 */
import { CorruptSessionError, formatSessionRef, type Session } from "../../../core/mod.ts";
import { type Command, refArg, stringOption } from "../command.ts";
import { UsageError } from "../exit.ts";
import { messageLine } from "../format.ts";
import { openForReading } from "../store.ts";

/** `sessionfold messages`: Active's messages, or an older segment's (read-only). Its `help` says what it prints. */
export const messages: Command = {
  help: [
    "Prints the messages of Active, or with --before the newest whole segment whose end is",
    "below SEQ (none when there is no such segment): page back with the first sequence shown.",
    "Exits 4 when a fatal diagnostic touches what it reads. Read-only.",
    "--json: an array of message records.",
  ].join("\n"),
  spec: {
    positionals: ["REF"],
    options: { before: { type: "string", value: "SEQ", description: "the newest segment ending below this sequence" } },
  },
  async run({ store, out, args }) {
    const ref = refArg(args);
    const beforeText = stringOption(args, "before");
    const before = beforeText === undefined ? undefined : Number(beforeText);
    if (before !== undefined && (!/^\d+$/.test(beforeText!) || !Number.isSafeInteger(before) || before < 1)) {
      throw new UsageError(`messages: --before expects a positive integer sequence, got ${JSON.stringify(beforeText)}`, { option: "--before" });
    }
    const opened = await store.holding(ref);
    const session = await openForReading(opened.sessions, ref);
    // A segment is read whole by readSegment, which refuses any invalid line itself.
    if (before === undefined) assertReadable(session, ["messages/active.jsonl"]);
    const list = await session.messages(before === undefined ? {} : { beforeSequence: before }).catch((error: unknown) => {
      if (!(error instanceof CorruptSessionError)) throw error;
      throw new CorruptSessionError(`${formatSessionRef(ref)}: ${error.message}`, { ref: formatSessionRef(ref), ...error.details });
    });
    return out.result(list, () => (list.length === 0 ? "no messages" : list.map((m) => messageLine(m)).join("\n")));
  },
};

/**
 * Refuses to read a session when a fatal diagnostic lies in one of `files`.
 *
 * @throws {CorruptSessionError} naming the file and line (`FILE:LINE`).
 */
export function assertReadable(session: Session, files: readonly string[]): void {
  const fatal = session.diagnostics.find((d) => d.fatal && files.includes(d.file));
  if (!fatal) return;
  throw new CorruptSessionError(`${formatSessionRef(session.ref)}: ${fatal.message}`, {
    ref: formatSessionRef(session.ref),
    file: fatal.file,
    line: fatal.line,
    diagnostic: fatal.code,
  });
}
