/**
 * `ls [--agent A] [--workspace W] [--archived] [--limit N] [--cursor C]`: sessions from
 * their workspace's catalog (docs/FORMAT.md "The catalog"), newest activity first, a page at
 * a time with `--limit`.
 *
 * @module
 */
import { assertId, type ListProblem, type SessionMeta } from "../../../core/mod.ts";
import { type Command, stringOption } from "../command.ts";
import { UsageError } from "../exit.ts";
import { clip, table } from "../format.ts";
import { escapeControls } from "../io.ts";

/** `sessionfold ls`: list sessions from their meta.json. Its `help` says what it prints. */
export const ls: Command = {
  help: [
    "Lists sessions, newest activity (updated_at) first, from each workspace's catalog",
    '(docs/FORMAT.md "The catalog"), a session without an entry from its meta.json.',
    "Folders whose meta.json cannot be read are named on stderr as warnings. Read-only.",
    "With --limit N, one page of N sessions; when more follow, stderr names the --cursor",
    "of the next page. A session is listed at most once across pages, and exactly once",
    "if it was not changed while they were read.",
    "--json: an array of the listing fields of each meta.json (docs/FORMAT.md); with",
    '--limit or --cursor, {"sessions": [...], "cursor": "…" or null}.',
  ].join("\n"),
  spec: {
    positionals: [],
    options: {
      agent: { type: "string", value: "A", description: "only this agent's sessions" },
      workspace: { type: "string", value: "W", description: "only this workspace's sessions" },
      archived: { type: "boolean", description: "list archived-sessions/ instead of sessions/" },
      limit: { type: "string", value: "N", description: "at most N sessions (a page)" },
      cursor: { type: "string", value: "C", description: "the page after the one that named cursor C" },
    },
  },
  async run({ store, out, args }) {
    const agentId = stringOption(args, "agent");
    const workspaceId = stringOption(args, "workspace");
    if (agentId !== undefined) assertId("agent_id", agentId);
    if (workspaceId !== undefined) assertId("workspace_id", workspaceId);
    const archived = args.options["archived"] === true;
    const limitText = stringOption(args, "limit");
    if (limitText !== undefined && !/^[1-9][0-9]{0,8}$/.test(limitText)) {
      throw new UsageError(`ls: --limit expects a positive integer, got ${JSON.stringify(limitText)}`, { option: "--limit" });
    }
    const cursor = stringOption(args, "cursor");
    const paged = limitText !== undefined || cursor !== undefined;
    const opened = await store.forReading();
    const problems: ListProblem[] = [];
    const metas = opened
      ? await opened.sessions.list({
        ...(agentId !== undefined ? { agentId } : {}),
        ...(workspaceId !== undefined ? { workspaceId } : {}),
        ...(limitText !== undefined ? { limit: Number(limitText) } : {}),
        ...(cursor !== undefined ? { cursor } : {}),
        archived,
        onProblem: (problem) => problems.push(problem),
      })
      : [];
    for (const problem of problems) out.note(`warning: ${problem.refText}: ${problem.message}`);
    const next = "cursor" in metas ? metas.cursor : undefined;
    if (next) out.note(`more: sessionfold ls${limitText !== undefined ? ` --limit ${limitText}` : ""} --cursor ${next}`);
    return out.result(paged ? { sessions: [...metas], cursor: next ?? null } : metas, () => listText(metas, archived));
  },
};

function listText(metas: readonly SessionMeta[], archived: boolean): string {
  if (metas.length === 0) return archived ? "no archived sessions" : "no sessions";
  return table(
    ["REF", "TITLE", "MESSAGES", "REVISION", "UPDATED"],
    metas.map((m) => [
      `${m.agent_id}/${m.workspace_id}/${m.session_id}`,
      clip(escapeControls(m.title ?? "-", { oneLine: true }), 40),
      String(m.message_count),
      String(m.revision),
      m.updated_at,
    ]),
  );
}
