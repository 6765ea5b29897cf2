/**
 * `compose REF`: exactly what the next model request would read.
 *
 * README-decisions (the provider identity `compose` composes for):
 * Composing needs the identity (provider, API, model) of the model that receives the
 * request, because `provider-context` parts go only to their exact producer. The CLI
 * calls no model and an agent file names no identity (`model_label` is a label), so it
 * composes for the model that would continue the conversation: the `provider` of the
 * newest assistant message in Active that has one. That keeps exactly the provider
 * context a host continuing with the same model would send, and leaves out what another
 * model produced, as the real request would. With no such message it composes for the
 * neutral identity `unknown/unknown/unknown` (the identity docs/FORMAT.md's export rule uses
 * when none is known): every provider-context part is then left out, since no known model
 * would receive it. Text output names the identity used and every change the composer
 * made (context left out, interrupted tool calls closed, empty messages dropped); the
 * `--json` document keeps docs/CLI.md's shape `{"system","summary","messages"}`.
 *
 * What is composed is what is committed: `instruction.md` (else the agent's instruction
 * and plugins from `agent.jsonc`), the newest footer's text, and Active. A live draft is
 * not a committed message; the next run first commits it as `stopped`, so the text output
 * mentions it. Exit 4 (`corrupt`) when a fatal diagnostic touches a file composing reads
 * (`instruction.md`, the newest segment, `active.jsonl`).
 *
 * @module
 */
import { compose as composeInput, formatSessionRef, type ProviderIdentity, relativeToSession, type Session } from "../../../core/mod.ts";
import { type Command, refArg } from "../command.ts";
import { messageLine } from "../format.ts";
import { loadAgent } from "../agent-setup.ts";
import { openForReading } from "../store.ts";
import { assertReadable } from "./messages.ts";

/** The identity composed for when no assistant message in Active names its provider. */
const NEUTRAL_IDENTITY: ProviderIdentity = { provider: "unknown", api: "unknown", model: "unknown" };

/** `sessionfold compose`: exactly what the next model request would read (read-only). Its `help` says what it prints. */
export const compose: Command = {
  help: [
    "Shows the model input of the next request: the system text (instruction.md, else the",
    "agent's instruction), the latest cumulative summary and every message of Active, with",
    "provider context kept only for the newest assistant message's provider identity.",
    "Exits 4 when a fatal diagnostic touches what it reads. Read-only.",
    '--json: {"system": string|null, "summary": string|null, "messages": [message records]}',
  ].join("\n"),
  spec: { positionals: ["REF"], options: {} },
  async run({ store, out, args }) {
    const ref = refArg(args);
    const opened = await store.holding(ref);
    const agent = await loadAgent(opened, ref.agentId);
    const session = await openForReading(opened.sessions, ref, agent.options);
    const newest = session.newestSegment;
    assertReadable(session, ["instruction.md", "messages/active.jsonl", ...(newest ? [relativeToSession(session.paths, session.paths.segment(newest))] : [])]);
    const identity = continuingIdentity(session);
    const composed = composeInput({ instruction: session.system, footer: session.summary, active: session.active, identity });
    const { system, summary, messages } = composed.input;
    return out.result({ system, summary, messages }, () => {
      const lines = [`# ${formatSessionRef(ref)}: the next request, composed for ${identity.provider}/${identity.api}/${identity.model}`];
      lines.push("", "## system", system ?? "(none)", "", "## summary", summary ?? "(none)", "", `## messages (${messages.length})`);
      lines.push(...messages.map((m) => messageLine(m)));
      const notes: string[] = [];
      for (const o of composed.omittedContext) notes.push(`provider context of ${o.provider}/${o.api}/${o.model} in #${o.sequence} left out`);
      for (const c of composed.closedToolCalls) notes.push(`tool call ${c.toolCallId} in #${c.sequence} closed as interrupted`);
      for (const f of composed.portableFallbacks) notes.push(`#${f} sent with its portable fallback text: none of its provider context is for this model`);
      for (const d of composed.droppedMessages) notes.push(`#${d} dropped: no part left`);
      if (session.draft) notes.push(`a live draft (${session.draft.record.message_id}) is not included; the next run first commits it as stopped`);
      if (notes.length > 0) lines.push("", "## notes", ...notes.map((n) => `- ${n}`));
      return lines.join("\n");
    });
  },
};

/** The provider of the newest assistant message in Active that names one, else {@linkcode NEUTRAL_IDENTITY}. */
function continuingIdentity(session: Session): ProviderIdentity {
  const active = session.active;
  for (let i = active.length - 1; i >= 0; i--) {
    const provider = active[i]!.provider;
    if (active[i]!.role === "assistant" && provider) return { provider: provider.provider, api: provider.api, model: provider.model };
  }
  return NEUTRAL_IDENTITY;
}
