/**
 * What the real-process PostgreSQL tests share: the writer fixture bundled once, the
 * attempts its processes report, and the check that every acknowledged message is in the
 * store exactly once and nothing refused is. Not a test file itself.
 */
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import { Sessions } from "../../core/mod.ts";
import { PostgresStorage } from "../../runtime-postgres/mod.ts";
import { bundledLauncher, type ChildLauncher, fullHistory, type Report } from "../node/process-support.ts";
import { POSTGRES_URL } from "./support.ts";

/** The writer fixture (fixtures/pg-writer.ts) as one bundle; `pg-native` is an addon `pg` loads only when asked. */
export function writerLauncher(): Promise<ChildLauncher & { dispose(): Promise<void> }> {
  return bundledLauncher("pg-writer", { dir: fileURLToPath(new URL("./fixtures", import.meta.url)), external: ["pg-native"] });
}

/** Creates the sessions `refs` in the store `schema`. */
export async function createSessions(schema: string, refs: readonly string[]): Promise<void> {
  const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema });
  try {
    const sessions = new Sessions({ storage });
    for (const ref of refs) {
      const [agentId, workspaceId, sessionId] = ref.split("/") as [string, string, string];
      await sessions.create({ agentId, workspaceId, sessionId, title: ref });
    }
  } finally {
    await storage.close();
  }
}

/** What the store holds against what the processes reported. */
export interface StoreCheck {
  readonly landed: number;
  readonly refused: Record<string, number>;
  readonly compactions: number;
  readonly segments: number;
}

/**
 * Every landed attempt is in its session exactly once, no refused attempt is (an attempt
 * whose outcome is `"unknown"`, sent as its lease was lost, may be there, once), refusals are
 * typed (`writer-locked`, `revision-conflict`, `lease-lost`), each history is contiguous from
 * 1 and opens with no diagnostic. `extraIds` are acknowledged writes made outside the reports.
 */
export async function checkStore(schema: string, refs: readonly string[], reports: readonly Report[], extraIds: readonly string[] = []): Promise<StoreCheck> {
  const attempts = reports.filter((r) => r.type === "attempt") as unknown as { id: string; result: string; code?: string }[];
  const landed = new Set([...attempts.filter((a) => a.result === "landed").map((a) => a.id), ...extraIds]);
  const refused: Record<string, number> = {};
  for (const a of [...attempts, ...(reports.filter((r) => r.type === "compact") as unknown as { result: string; code?: string }[])]) {
    if (a.result === "failed") refused[a.code ?? "?"] = (refused[a.code ?? "?"] ?? 0) + 1;
  }
  expect(Object.keys(refused).filter((code) => code !== "writer-locked" && code !== "revision-conflict" && code !== "lease-lost"), "only typed refusals")
    .toEqual([]);
  const refusedIds = new Set(attempts.filter((a) => a.result === "failed").map((a) => a.id));
  const storage = new PostgresStorage({ connectionString: POSTGRES_URL, schema });
  let segments = 0;
  try {
    const sessions = new Sessions({ storage });
    const stored = new Map<string, number>();
    for (const ref of refs) {
      const session = await sessions.open(ref);
      expect(session.diagnostics, `${ref} opens clean`).toEqual([]);
      const history = await fullHistory(session);
      expect(history.map((m) => m.sequence), `${ref} is contiguous`).toEqual(history.map((_, i) => i + 1));
      segments += (await session.segments()).length;
      for (const message of history) stored.set(message.message_id, (stored.get(message.message_id) ?? 0) + 1);
    }
    const twice = [...stored].filter(([, n]) => n > 1).map(([id]) => id);
    expect(twice, "no message stored twice").toEqual([]);
    const lost = [...landed].filter((id) => !stored.has(id));
    expect(lost, "every acknowledged message is stored").toEqual([]);
    const ghosts = [...refusedIds].filter((id) => stored.has(id));
    expect(ghosts, "no refused attempt is stored").toEqual([]);
  } finally {
    await storage.close();
  }
  return { landed: landed.size, refused, compactions: reports.filter((r) => r.type === "compact" && r.result === "landed").length, segments };
}
