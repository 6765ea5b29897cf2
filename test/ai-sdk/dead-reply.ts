/**
 * A reply whose producer died mid-stream, on a `MemoryStorage`: what a server that was killed
 * while it streamed leaves behind. Not a test file itself.
 */
import { MemoryStorage, type Provider } from "../../core/mod.ts";
import { createSession, forceUnlock } from "../run/support.ts";

/** The text the dead reply had streamed, which its draft holds. */
export const PARTIAL_REPLY = "Half a rep";

/**
 * A MemoryStorage whose `replace` calls `noticed()` once a draft holding `text` is stored: the
 * moment a crash would leave that draft behind.
 */
export function noticingDraft(memory: MemoryStorage, text: string): { storage: MemoryStorage; drafted: Promise<void> } {
  let noticed!: () => void;
  const drafted = new Promise<void>((resolve) => (noticed = resolve));
  const storage = new Proxy(memory, {
    get(target, key) {
      const value = Reflect.get(target, key) as unknown;
      if (key === "replace") {
        return async (path: string, bytes: Uint8Array) => {
          await memory.replace(path, bytes);
          if (path.endsWith("assistant_message.json") && new TextDecoder().decode(bytes).includes(text)) noticed();
        };
      }
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { storage, drafted };
}

/**
 * Session a1/w1/s1 on a new MemoryStorage, as a killed server leaves it: the user's question
 * committed, the reply's draft holding {@linkcode PARTIAL_REPLY}, the writer's lock gone (as
 * when the next writer reclaims a dead one's). The run that wrote it never goes on: it stands
 * for the process that died.
 */
export async function storeWithDeadReply(): Promise<MemoryStorage> {
  const memory = new MemoryStorage();
  const { storage, drafted } = noticingDraft(memory, PARTIAL_REPLY);
  const { session } = await createSession(storage);
  const provider: Provider = {
    identity: { provider: "test", api: "chat", model: "dies" },
    async *stream() {
      yield { type: "text-delta", text: PARTIAL_REPLY };
      await new Promise(() => {});
    },
  };
  void session.run("Tell me everything", { provider }).result.catch(() => undefined);
  await drafted;
  await forceUnlock(memory);
  return memory;
}
