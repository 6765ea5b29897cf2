/**
 * The sessions of case 14 (listing at scale), platform-free so the chromium page writes the
 * same ones: one workspace of n sessions, each `meta.json` a realistic document, each session
 * last active a second after the one before.
 *
 * @module
 */
export { withoutCatalog } from "../../support/without-catalog.ts";

/** The agent and workspace listed. */
export const LIST_AGENT = "bench";
export const LIST_WORKSPACE = "w1";
/** A page, as `sessionfold ls --limit 50` asks for. */
export const LIST_PAGE = 50;

const BASE_TIME = Date.parse("2026-01-01T00:00:00.000Z");
const encoder = new TextEncoder();

/** The `meta.json` of session `s<i>` of `workspace`. */
export function listFixtureMeta(
  i: number,
  workspace = LIST_WORKSPACE,
): Uint8Array {
  const at = (s: number) => new Date(BASE_TIME + s * 1000).toISOString();
  const meta = {
    schema_version: 1,
    session_id: `s${i}`,
    agent_id: LIST_AGENT,
    workspace_id: workspace,
    title: `Session ${i}: port the build to Deno`,
    model_label: "gpt-5",
    created_at: at(i),
    updated_at: at(i + 10),
    message_count: 40 + (i % 100),
    history_bytes: 12_000 + i,
    timezone: "Europe/Berlin",
    revision: 41 + (i % 100),
    provider: { provider: "openai", api: "responses", model: "gpt-5" },
  };
  return encoder.encode(`${JSON.stringify(meta, null, 2)}\n`);
}
