/**
 * `repair REF [--apply]`: what `Session.repair()` plans for a damaged session, and with
 * `--apply` the plan carried out (docs/CLI.md, docs/FORMAT.md "Repair").
 *
 * @module
 */
import { CorruptSessionError, formatSessionRef, type RepairReport, sessionPaths, type SessionRef } from "../../../core/mod.ts";
import { detachHardLink, type HardLinkedFile, hardLinkedFiles } from "../../fs-boundary.ts";
import { type Command, refArg } from "../command.ts";
import { counted } from "../format.ts";
import { openForReading, openForWriting, type Store } from "../store.ts";

/** `sessionfold repair`: quarantine bad lines and rebuild meta.json. Its `help` says what it prints. */
export const repair: Command = {
  help: [
    "Reads every file of the session and shows what it would do; changes nothing.",
    "With --apply, under the session's lock: every line recovery reports or would cut (an",
    "unreadable line, a torn tail, a duplicate, messages already in a segment) moves into",
    "quarantine/<file>.<time>.jsonl beside the session, an unreadable meta.json, draft or",
    "instruction.md moves there whole, every valid record keeps its bytes and sequence, and",
    "meta.json is rebuilt. Nothing is deleted. Two writers' messages with one sequence (a",
    "split brain) are all kept: the line written first keeps the sequence, the others are",
    "renumbered after the last message, ids kept (their originals go to quarantine too).",
    "A gap in the sequences that no line closes is refused with the reason (exit 4).",
    "In a folder store, a session file with other hard links (every write to it is refused)",
    "gets a copy of its own (same bytes; the other copies stay as they are).",
    '--json: {"ref","applied","clean","refused":[],"moves":[{"from","to","lines":[{"line","code","reason","bytes"}],"bytes","reason"}],"rewritten","kept","meta","detached":[{"file","links"}]}',
  ].join("\n"),
  spec: { positionals: ["REF"], options: { apply: { type: "boolean", description: "carry the plan out (default: only show it)" } } },
  async run({ store, out, args }) {
    const ref = refArg(args);
    const apply = args.options["apply"] === true;
    const opened = await store.holding(ref);
    // Before the plan: its writes would meet the same refusal as append's.
    const linked = sharedFiles(store, ref);
    if (apply) { for (const file of linked) detachHardLink(store.folder!, file); }
    const detached = linked.map((file) => ({ file: file.path.slice(sessionPaths(ref).dir.length + 1), links: file.links }));
    const session = apply ? await openForWriting(opened.sessions, ref) : await openForReading(opened.sessions, ref);
    const planned = await session.repair({ apply });
    const report: RepairReport & { detached: typeof detached } = { ...planned, clean: planned.clean && detached.length === 0, detached };
    if (report.refused.length > 0) {
      // The plan alone is refused the same way --apply would be: nothing can be done.
      const reasons = report.refused.map((r) => r.reason);
      throw new CorruptSessionError(`${formatSessionRef(ref)} cannot be repaired: ${reasons.join("; ")}`, {
        file: report.refused[0]!.file,
        line: report.refused[0]!.line,
        refused: report.refused.map((r) => ({ ...r })),
      });
    }
    return out.result(report, () => repairText(report));
  },
};

/** The files of a live session in a folder store that writes touch and that have other hard links. */
function sharedFiles(store: Store, ref: SessionRef): HardLinkedFile[] {
  if (store.folder === undefined) return [];
  const paths = sessionPaths(ref);
  return hardLinkedFiles(store.folder, [paths.meta, paths.active, paths.draft, paths.instruction]);
}

function repairText(report: RepairReport & { detached: readonly { file: string; links: number }[] }): string {
  if (report.clean) return `${report.ref}: nothing to repair (revision ${report.meta.revision})`;
  const out = [report.applied ? `repaired ${report.ref}:` : `${report.ref}: repair plan (nothing changed yet; run again with --apply)`];
  for (const { file, links } of report.detached) {
    out.push(
      `  ${
        report.applied ? "gave" : "give"
      } ${file} a copy of its own (it had ${links} hard links; writes to it are refused; the other copies stay as they are)`,
    );
  }
  const verb = report.applied ? "moved" : "move";
  for (const move of report.moves) {
    if (move.lines) {
      for (const line of move.lines) {
        out.push(`  ${verb} ${move.from}:${line.line} (${line.code}, ${counted(line.bytes, "byte")}: ${line.reason}) -> ${move.to}`);
      }
    } else {
      out.push(`  ${verb} ${move.from} (the whole file, ${counted(move.bytes, "byte")}: ${move.reason}) -> ${move.to}`);
    }
  }
  for (const file of report.rewritten) out.push(`  ${report.applied ? "rewrote" : "rewrite"} ${file} without the moved lines`);
  const { meta, kept } = report;
  if (meta.action !== "unchanged") {
    out.push(
      `  meta.json ${meta.action} (revision ${meta.previousRevision ?? "none"} -> ${meta.revision})${
        meta.salvaged ? `; kept from the old one: ${meta.salvaged.join(", ") || "nothing"}` : ""
      }`,
    );
  }
  const renumbered = report.moves.flatMap((move) => move.lines ?? []).filter((line) => line.code === "renumbered").length;
  const sequences = renumbered > 0 ? `${renumbered} renumbered after the rest with their ids, the others untouched` : "sequences untouched";
  out.push(`kept: ${counted(kept.messages, "message")} (${sequences}, last ${kept.lastSequence}) in ${counted(kept.segments, "segment")} and Active`);
  return out.join("\n");
}
