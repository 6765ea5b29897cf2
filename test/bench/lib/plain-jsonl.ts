/**
 * The plain JSONL host every open row is measured against: its system text and what it does
 * to get the next model call's input. Apart from `synth.ts`, and importing nothing, so that
 * the peers' probe (`probe-peers.ts`) loads what a plain reader's process loads and no module
 * of sessionfold (test/bench/notes.md, case 1).
 *
 * @module
 */

/** The system text of every synthetic session (a plain JSONL host would keep it in its config). */
export const BENCH_SYSTEM = "You are a careful coding agent. Answer briefly and cite the files you read.";

/**
 * What a plain JSONL host does to get the next model call's input: parse every line of
 * the whole file, then take the last summary and every message after it.
 */
export function contextFromPlainJsonl(text: string): { system: string; summary: string | null; messages: unknown[] } {
  const records: { record_type?: string; text?: string }[] = [];
  for (const line of text.split("\n")) if (line) records.push(JSON.parse(line) as { record_type?: string; text?: string });
  let last = -1;
  for (let i = records.length - 1; i >= 0; i--) {
    if (records[i]!.record_type === "summary") {
      last = i;
      break;
    }
  }
  return { system: BENCH_SYSTEM, summary: last >= 0 ? records[last]!.text ?? null : null, messages: records.slice(last + 1) };
}
