/**
 * The commands that change one session's content: `new`, `append`, `compact`. Each
 * opens the session with its agent's options (`agents/<agent_id>/agent.jsonc`) and runs
 * one mutating operation under the session's `writer.lock`.
 *
 * @module
 */
import { type CompactionOutcome, formatSessionRef, type NoCompaction } from "../../../core/mod.ts";
import { type Command, refArg, stringOption } from "../command.ts";
import { UsageError } from "../exit.ts";
import { counted } from "../format.ts";
import { loadAgent } from "../agent-setup.ts";
import { openForWriting } from "../store.ts";

/** `sessionfold new`: create an empty session. Its `help` says what it prints. */
export const create: Command = {
  help: [
    "Creates an empty session (meta.json at revision 0). The agent's model_label, when its",
    "agent.jsonc has one, becomes the session's. Refused when the id exists, live or archived.",
    "--json: the new meta.",
  ].join("\n"),
  spec: { positionals: ["REF"], options: { title: { type: "string", value: "T", description: "the session's title" } } },
  async run({ store, out, args }) {
    const ref = refArg(args);
    const title = stringOption(args, "title");
    const opened = await store.forWriting();
    const agent = await loadAgent(opened, ref.agentId);
    const session = await opened.sessions.create(
      { ...ref, ...(title !== undefined ? { title } : {}), ...(agent.modelLabel !== undefined ? { modelLabel: agent.modelLabel } : {}) },
      agent.options,
    );
    const meta = session.meta;
    return out.result(meta, () => `created ${formatSessionRef(ref)} (revision ${meta.revision})`);
  },
};

/** `sessionfold append`: commit one text message. Its `help` says what it prints. */
export const append: Command = {
  help: [
    "Commits one text message. A live draft left by an interrupted run is first finished",
    "as stopped, in the same commit. Exits 3 when another writer holds the session.",
    '--json: {"sequence","revision"}',
  ].join("\n"),
  spec: {
    positionals: ["REF"],
    options: {
      role: { type: "string", value: "user|assistant", description: "who wrote it" },
      text: { type: "string", value: "T", description: "the message text" },
    },
  },
  async run({ store, out, args }) {
    const role = stringOption(args, "role");
    const text = stringOption(args, "text");
    if (role === undefined) throw new UsageError("append: missing --role user|assistant", { option: "--role" });
    if (role !== "user" && role !== "assistant") {
      throw new UsageError(`append: --role must be user or assistant, got ${JSON.stringify(role)}`, { option: "--role" });
    }
    if (text === undefined) throw new UsageError("append: missing --text T", { option: "--text" });
    const ref = refArg(args);
    const opened = await store.holding(ref);
    const agent = await loadAgent(opened, ref.agentId);
    const session = await openForWriting(opened.sessions, ref, agent.options);
    const { sequences, revision } = await session.append({ role, parts: [{ type: "text", text }] });
    const sequence = sequences[0]!;
    return out.result({ sequence, revision }, () => `appended #${sequence} to ${formatSessionRef(ref)} (revision ${revision})`);
  },
};

/** `sessionfold compact`: compact Active with the configured summarizer. Its `help` says what it prints. */
export const compact: Command = {
  help: [
    "Moves the oldest half of Active into a new segment whose footer is the cumulative",
    "summary, made by the agent's configured summarizer (agent.jsonc), else the offline",
    "extractive one. With fewer than 2 messages in Active nothing changes.",
    '--json: the CompactionOutcome {"revision","removedMessages","keptMessages","segment",…}',
  ].join("\n"),
  spec: { positionals: ["REF"], options: {} },
  async run({ store, out, args }) {
    const ref = refArg(args);
    const opened = await store.holding(ref);
    const agent = await loadAgent(opened, ref.agentId);
    const session = await openForWriting(opened.sessions, ref, agent.options);
    const outcome = await session.compact({ summarizer: agent.summarizer });
    return out.result(outcome, () => compactText(formatSessionRef(ref), outcome));
  },
};

function compactText(ref: string, outcome: CompactionOutcome | NoCompaction): string {
  if (outcome.segment === null) {
    return `nothing to compact in ${ref}: Active holds ${counted(outcome.keptMessages, "message")} (revision ${outcome.revision})`;
  }
  const o = outcome as CompactionOutcome;
  return [
    `compacted ${ref}: messages ${o.segment.start}-${o.segment.end} moved to a segment, ${o.keptMessages} kept in Active (revision ${o.revision})`,
    `summary ${counted(o.summaryChars, "char")}; estimated tokens ${o.beforeTokens} -> ${o.afterTokens}`,
  ].join("\n");
}
