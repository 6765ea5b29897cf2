/**
 * `ls [--agent A] [--workspace W] [--archived]`: sessions from their `meta.json`, newest update first.
 *
 * @module
 */
import { assertId, type ListProblem, type SessionMeta } from "../../../core/mod.ts";
import { type Command, stringOption } from "../command.ts";
import { clip, table } from "../format.ts";

/** `sessionfold ls`: list sessions from their meta.json. Its `help` says what it prints. */
export const ls: Command = {
  help: [
    "Lists sessions from their meta.json, newest update first. Folders whose meta.json",
    "cannot be read are named on stderr as warnings. Read-only.",
    "--json: an array of meta objects (docs/FORMAT.md).",
  ].join("\n"),
  spec: {
    positionals: [],
    options: {
      agent: { type: "string", value: "A", description: "only this agent's sessions" },
      workspace: { type: "string", value: "W", description: "only this workspace's sessions" },
      archived: { type: "boolean", description: "list archived-sessions/ instead of sessions/" },
    },
  },
  async run({ store, out, args }) {
    const agentId = stringOption(args, "agent");
    const workspaceId = stringOption(args, "workspace");
    if (agentId !== undefined) assertId("agent_id", agentId);
    if (workspaceId !== undefined) assertId("workspace_id", workspaceId);
    const archived = args.options["archived"] === true;
    const opened = await store.forReading();
    const problems: ListProblem[] = [];
    const metas = opened
      ? await opened.sessions.list({
        ...(agentId !== undefined ? { agentId } : {}),
        ...(workspaceId !== undefined ? { workspaceId } : {}),
        archived,
        onProblem: (problem) => problems.push(problem),
      })
      : [];
    for (const problem of problems) out.note(`warning: ${problem.refText}: ${problem.message}`);
    return out.result(metas, () => listText(metas, archived));
  },
};

function listText(metas: readonly SessionMeta[], archived: boolean): string {
  if (metas.length === 0) return archived ? "no archived sessions" : "no sessions";
  return table(
    ["REF", "TITLE", "MESSAGES", "REVISION", "UPDATED"],
    metas.map((m) => [
      `${m.agent_id}/${m.workspace_id}/${m.session_id}`,
      clip(m.title ?? "-", 40),
      String(m.message_count),
      String(m.revision),
      m.updated_at,
    ]),
  );
}
