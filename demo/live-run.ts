/**
 * This tab's turn as it streams. The reply is the AI SDK UI message the bridge's stream
 * builds (`runToUIMessageStream`, read with the AI SDK's `readUIMessageStream` in turn.ts),
 * the very message a `useChat` client holds; the run's other events, which no UI message
 * carries, give the newest usage and a compaction in progress for the gauge.
 */
import type { UIMessage } from "ai";
import type { RunEvent, Usage } from "../core/mod.ts";
import type { SessionfoldUIMetadata } from "../ai-sdk/ui-messages.ts";

/** An AI SDK UI message as sessionfold's bridge gives it: a turn, its metadata the stored facts. */
export type ChatMessage = UIMessage<SessionfoldUIMetadata>;

/** This tab's running turn. */
export interface LiveRun {
  readonly controller: AbortController;
  /** The user's message, shown as pending until the turn commits. */
  readonly question: string;
  /** The assistant's reply so far, as the UI message stream has built it (none before its first chunk). */
  reply?: ChatMessage;
  /** The newest real usage of this turn since its last compaction. */
  usage?: Usage;
  /** The reason of the compaction running now. */
  compacting?: string;
}

/** A run that starts with the user's `text`. */
export function startLiveRun(text: string): LiveRun {
  return { controller: new AbortController(), question: text };
}

/** Folds the run events the gauge reads (usage, compactions) into `run`; the reply comes from the UI message stream. */
export function noteRunEvent(run: LiveRun, event: RunEvent): void {
  switch (event.type) {
    case "usage":
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
