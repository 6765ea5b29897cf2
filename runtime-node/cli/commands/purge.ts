/**
 * `purge --older-than D [--keep-newest N] [--agent A] [--workspace W] [--archived] [--dry-run]`:
 * retention the user runs (`Sessions.purge`), never the store on its own.
 *
 * @module
 */
import { assertId, type PurgeEntry, type PurgeResult } from "../../../core/mod.ts";
import { type Command, stringOption } from "../command.ts";
import { UsageError } from "../exit.ts";
import { counted, table } from "../format.ts";

const UNIT_MS: Record<string, number> = { d: 86_400_000, h: 3_600_000, m: 60_000 };

/**
 * `30d`, `12h`, `90m` in milliseconds.
 *
 * @throws {UsageError} naming the option and what was found when `text` is not such a duration.
 */
function parseDuration(text: string, option: string): number {
  const match = /^([0-9]{1,9})([dhm])$/.exec(text);
  if (!match) throw new UsageError(`purge: ${option} expects a duration such as 30d, 12h or 90m, got ${JSON.stringify(text)}`, { option });
  return Number(match[1]) * UNIT_MS[match[2]!]!;
}

/** `sessionfold purge`: delete sessions by age of last activity or by count. Its `help` says what it prints. */
export const purge: Command = {
  help: [
    "Deletes the sessions last active (meta.json's updated_at) longer ago than --older-than",
    "and beyond the --keep-newest newest of each workspace; with both, a session must match",
    "both. Archived sessions go first (with --archived), then the oldest. A session a writer",
    "holds (writer.lock) or whose draft is streaming is skipped with the reason, and so is",
    "one whose meta.json cannot be read (never deleted, not counted by --keep-newest). Each",
    'deletion removes every file of the session (docs/FORMAT.md "Deletion"). Runs only when',
    "called: nothing in sessionfold purges on its own. --dry-run lists exactly what a run",
    "would delete and deletes nothing.",
    "--json: {dryRun, entries: [{ref, place, updatedAt (null: meta.json unreadable), outcome, reason?, removed?}]}.",
  ].join("\n"),
  spec: {
    positionals: [],
    options: {
      "older-than": { type: "string", value: "D", description: "last activity older than D (30d, 12h, 90m)" },
      "keep-newest": { type: "string", value: "N", description: "keep the N newest sessions of each workspace" },
      agent: { type: "string", value: "A", description: "only this agent's sessions" },
      workspace: { type: "string", value: "W", description: "only this workspace's sessions" },
      archived: { type: "boolean", description: "archived sessions are candidates too (and go first)" },
      "dry-run": { type: "boolean", description: "list what would be deleted; delete nothing" },
    },
  },
  async run({ store, out, args }) {
    const olderText = stringOption(args, "older-than");
    const keepText = stringOption(args, "keep-newest");
    if (olderText === undefined && keepText === undefined) {
      throw new UsageError("purge: give --older-than D or --keep-newest N (or both)", { option: "--older-than" });
    }
    const olderThan = olderText !== undefined ? parseDuration(olderText, "--older-than") : undefined;
    if (keepText !== undefined && !/^[0-9]{1,9}$/.test(keepText)) {
      throw new UsageError(`purge: --keep-newest expects a non-negative integer, got ${JSON.stringify(keepText)}`, { option: "--keep-newest" });
    }
    const agentId = stringOption(args, "agent");
    const workspaceId = stringOption(args, "workspace");
    if (agentId !== undefined) assertId("agent_id", agentId);
    if (workspaceId !== undefined) assertId("workspace_id", workspaceId);
    const dryRun = args.options["dry-run"] === true;
    // A store that does not exist has nothing to purge, and is not created for it.
    const opened = await store.forReading();
    const result: PurgeResult = opened
      ? await opened.sessions.purge({
        ...(olderThan !== undefined ? { olderThan } : {}),
        ...(keepText !== undefined ? { keepNewest: Number(keepText) } : {}),
        ...(agentId !== undefined ? { agentId } : {}),
        ...(workspaceId !== undefined ? { workspaceId } : {}),
        includeArchived: args.options["archived"] === true,
        dryRun,
      })
      : { dryRun, entries: [] };
    return out.result(result, () => purgeText(result));
  },
};

function purgeText({ dryRun, entries }: PurgeResult): string {
  if (entries.length === 0) return dryRun ? "nothing would be purged" : "nothing purged";
  const count = (outcome: PurgeEntry["outcome"]) => entries.filter((e) => e.outcome === outcome).length;
  const summary = dryRun
    ? `${count("would-delete")} would be deleted, ${count("skipped")} skipped (dry run)`
    : `${count("deleted")} deleted, ${count("skipped")} skipped`;
  const rows = entries.map((e) => [e.ref, e.place, e.updatedAt ?? "-", e.outcome, e.reason ?? (e.removed ? counted(e.removed.length, "file") : "")]);
  return `${table(["REF", "PLACE", "LAST ACTIVITY", "OUTCOME", "DETAIL"], rows)}\n${summary}`;
}
