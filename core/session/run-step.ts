/**
 * One step of the agent turn (`run.ts`): a provider's stream folded into the draft message
 * part by part, with each event passed on to the host, and one tool call carried out.
 *
 * @module
 */
import { InvalidInputError, LimitExceededError } from "../errors.ts";
import type { ModelInput, Provider, ProviderEvent, Tool, ToolDefinition } from "../model/mod.ts";
import { assertJsonDepth } from "../schema/json-depth.ts";
import { utf8Bytes } from "../schema/utf8.ts";
import { formatBytes, MAX_LINE_BYTES } from "../storage/limits.ts";
import type { DraftRecord, MessagePart, ToolPart } from "../schema/mod.ts";
import type { RunEvent } from "./run-events.ts";
import { untilAborted } from "./until-aborted.ts";

/** Streams one provider step into `message` (the draft), telling `changed` after each event. */
export async function streamStep(
  provider: Provider,
  input: ModelInput,
  tools: readonly ToolDefinition[],
  signal: AbortSignal,
  message: DraftRecord,
  emit: (event: RunEvent) => void,
  changed: () => void,
): Promise<void> {
  const parts = message.parts as MessagePart[];
  const nextSequence = () => (parts.at(-1)?.sequence ?? 0) + 1;
  const appendText = (type: "text" | "reasoning", text: string) => {
    const last = parts.at(-1);
    if (last && last.type === type) parts[parts.length - 1] = { ...last, text: last.text + text };
    else parts.push({ sequence: nextSequence(), type, text });
  };
  // Iterated by hand: on an abort, `for await` would wait for the `return()` of a stream stuck
  // in an `await` that ignores the signal; here the stream is asked to end and not waited for.
  const events = provider.stream({ ...input, tools, signal })[Symbol.asyncIterator]();
  const end = () => void Promise.resolve(events.return?.()).catch(() => undefined);
  for (;;) {
    let next: IteratorResult<ProviderEvent>;
    try {
      next = await untilAborted(events.next(), signal);
    } catch (error) {
      if (!signal.aborted) throw error;
      end();
      return;
    }
    if (next.done) return;
    if (signal.aborted) return end();
    try {
      foldEvent(next.value);
    } catch (error) {
      end();
      throw error;
    }
  }

  function foldEvent(event: ProviderEvent): void {
    switch (event.type) {
      case "text-delta":
        appendText("text", event.text);
        break;
      case "reasoning-delta":
        appendText("reasoning", event.text);
        break;
      case "reasoning-summary":
        parts.push({ sequence: nextSequence(), type: "reasoning-summary", text: event.text });
        break;
      case "tool-call":
        // Stored, stringified and estimated by recursive walkers: refused typed when too deep.
        assertJsonDepth(event.input, `provider ${provider.identity.provider}: the input of tool call ${event.toolCallId}`);
        parts.push({
          sequence: nextSequence(),
          type: "tool",
          tool_call_id: event.toolCallId,
          tool_name: event.toolName,
          state: "input-available",
          input: event.input,
        });
        break;
      case "file":
        parts.push({
          sequence: nextSequence(),
          type: "file",
          media_type: event.mediaType,
          ...(event.name !== undefined ? { name: event.name } : {}),
          ...(event.data !== undefined ? { data: event.data } : {}),
          ...(event.url !== undefined ? { url: event.url } : {}),
        });
        break;
      case "provider-context":
        parts.push({ sequence: nextSequence(), type: "provider-context", ...provider.identity, data: event.data });
        break;
      case "usage":
        message.usage = event.usage;
        break;
      default:
        throw new InvalidInputError(`provider ${provider.identity.provider} streamed an unknown event ${JSON.stringify((event as { type?: unknown }).type)}`);
    }
    // Files and provider context reach the host through the committed message, not as events.
    if (event.type !== "file" && event.type !== "provider-context") emit(event);
    changed();
  }
}

/** Runs the tool a `tool` part calls and settles the part with its output or error. */
export async function runTool(part: ToolPart, tool: Tool | undefined, signal: AbortSignal, emit: (event: RunEvent) => void): Promise<void> {
  const settle = (update: Partial<ToolPart>) => Object.assign(part, update);
  if (!tool) {
    settle({ state: "output-error", error: `no tool named "${part.tool_name}" is available` });
    emit({ type: "tool-error", toolCallId: part.tool_call_id, toolName: part.tool_name, error: part.error! });
    return;
  }
  let stored: unknown;
  try {
    const output = await untilAborted(Promise.resolve(tool.execute(part.input, { toolCallId: part.tool_call_id, signal })), signal);
    if (signal.aborted) return;
    assertJsonDepth(output, `the output of tool ${part.tool_name}`);
    const json = JSON.stringify(output);
    assertFitsALine(json, part.tool_name);
    stored = output === undefined ? null : JSON.parse(json);
  } catch (error) {
    if (signal.aborted) return;
    settle({ state: "output-error", error: error instanceof Error ? error.message : String(error) });
    emit({ type: "tool-error", toolCallId: part.tool_call_id, toolName: part.tool_name, error: part.error! });
    return;
  }
  // Outside the try: a failing event delivery is fatal to the run, not an error of the tool.
  settle({ state: "output-available", output: stored });
  emit({ type: "tool-result", toolCallId: part.tool_call_id, toolName: part.tool_name, output: stored });
}

/**
 * Refuses, as the tool's error, an output no stored message could hold (docs/FORMAT.md
 * "Limits": a line of at most 64 MiB): kept, it would fail the run's commit and lose the
 * turn. A JSON text's UTF-8 is at least its length and at most three times it, so the bytes
 * are counted only between the two.
 */
function assertFitsALine(json: string | undefined, toolName: string): void {
  if (json === undefined || json.length * 3 <= MAX_LINE_BYTES) return;
  const bytes = json.length > MAX_LINE_BYTES ? json.length : utf8Bytes(json).length;
  if (bytes > MAX_LINE_BYTES) {
    throw new LimitExceededError(
      `the output of tool ${toolName} is at least ${formatBytes(bytes)} as JSON, over the ${formatBytes(MAX_LINE_BYTES)} a stored message may hold`,
      { limit: "MAX_LINE_BYTES", max: MAX_LINE_BYTES, found: bytes },
    );
  }
}
