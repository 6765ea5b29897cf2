/** The device the sync tests of one run start from: one session holding one message. */
import { MemoryStorage, Sessions, type SessionsOptions, type StoragePort } from "../../core/mod.ts";

/**
 * `Sessions` over `storage` (default a fresh `MemoryStorage`), made with `options`, holding the session
 * `a1/<workspaceId>/s1` (default `w1`) with one user message, "one".
 */
export async function deviceWithOneMessage(
  place: { readonly storage?: StoragePort; readonly workspaceId?: string } = {},
  options: Omit<SessionsOptions, "storage"> = {},
) {
  const storage = place.storage ?? new MemoryStorage();
  const sessions = new Sessions({ storage, ...options });
  const session = await sessions.create({ agentId: "a1", workspaceId: place.workspaceId ?? "w1", sessionId: "s1" });
  await session.append({ role: "user", parts: [{ type: "text", text: "one" }] });
  return { storage, sessions, session };
}
