/**
 * The `meta.json` the IndexedDB catalog tests write for a session of `a1/w1` (the DOM tests
 * and the real storage worker's): session `s<k>` last active at minute 10 plus `k` seconds,
 * so sessions sort by number. Not a test file itself.
 */
export const catalogMeta = (id: string, title = id): Uint8Array =>
  new TextEncoder().encode(
    JSON.stringify({
      schema_version: 1,
      session_id: id,
      agent_id: "a1",
      workspace_id: "w1",
      title,
      updated_at: `2026-12-04T10:${id.slice(1).padStart(5, "0")}Z`,
    }),
  );
