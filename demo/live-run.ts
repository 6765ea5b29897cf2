/**
 * This tab's turn as it streams: the run's events folded into the messages the chat shows
 * before anything is committed (text and reasoning grow in place, tool calls get their
 * results), with the newest usage and a compaction in progress for the gauge.
 */
import type { MessagePart, MessageRecord, ProviderIdentity, RunEvent, Usage } from "../core/mod.ts";

/** A message of this tab's run that is not committed yet. */
export interface LiveMessage {
  role: "user" | "assistant";
  parts: MessagePart[];
  usage?: Usage;
  provider?: MessageRecord["provider"];
}

/** This tab's running turn. */
export interface LiveRun {
  readonly controller: AbortController;
  readonly messages: LiveMessage[];
  /** The newest real usage of this turn since its last compaction. */
  usage?: Usage;
  /** The reason of the compaction running now. */
  compacting?: string;
}

/** A run that starts with the user's `text`. */
export function startLiveRun(text: string): LiveRun {
  return { controller: new AbortController(), messages: [{ role: "user", parts: [{ sequence: 1, type: "text", text }] }] };
}

/**
 * Folds one run event into `run`; `identity` is the provider a new assistant message is
 * stamped with. Events without content (commits, folds) leave it as it is.
 */
export function applyRunEvent(run: LiveRun, event: RunEvent, identity: ProviderIdentity): void {
  const assistant = () => {
    let last = run.messages.at(-1);
    if (!last || last.role !== "assistant") {
      last = { role: "assistant", parts: [], provider: { ...identity } };
      run.messages.push(last);
    }
    return last;
  };
  const appendText = (type: "text" | "reasoning", text: string) => {
    const message = assistant();
    const last = message.parts.at(-1);
    if (last && last.type === type) message.parts[message.parts.length - 1] = { ...last, text: last.text + text };
    else message.parts.push({ sequence: message.parts.length + 1, type, text });
  };
  switch (event.type) {
    case "step-started":
      run.messages.push({ role: "assistant", parts: [], provider: { ...identity } });
      break;
    case "text-delta":
    case "reasoning-delta":
      appendText(event.type === "text-delta" ? "text" : "reasoning", event.text);
      break;
    case "reasoning-summary":
      assistant().parts.push({ sequence: assistant().parts.length + 1, type: "reasoning-summary", text: event.text });
      break;
    case "tool-call":
      assistant().parts.push({ sequence: assistant().parts.length + 1, type: "tool", tool_call_id: event.toolCallId, tool_name: event.toolName, state: "input-available", input: event.input });
      break;
    case "tool-result":
    case "tool-error": {
      const message = assistant();
      message.parts = message.parts.map((p) =>
        p.type === "tool" && p.tool_call_id === event.toolCallId
          ? event.type === "tool-result"
            ? { ...p, state: "output-available", output: event.output }
            : { ...p, state: "output-error", error: event.error }
          : p,
      );
      break;
    }
    case "usage":
      assistant().usage = event.usage;
      run.usage = event.usage;
      break;
    case "compaction-started":
      run.compacting = event.reason;
      // The usage before a compaction says nothing about the window after it.
      run.usage = undefined;
      break;
    case "compaction-completed":
    case "compaction-failed":
      run.compacting = undefined;
      break;
    default:
      break;
  }
}
