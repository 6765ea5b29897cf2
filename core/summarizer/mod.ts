/**
 * Summarizers that ship with sessionfold. {@linkcode ExtractiveSummarizer} is
 * deterministic and needs no model or network: the default of `sessionfold compact`
 * and of the browser demo. A host that wants a model-written summary implements
 * {@linkcode Summarizer} itself (one call per compaction).
 *
 * @example
 * ```ts
 * import { ExtractiveSummarizer, MemoryStorage, Sessions } from "sessionfold";
 * const sessions = new Sessions({
 *   storage: new MemoryStorage(),
 *   defaults: { summarizer: new ExtractiveSummarizer({ maxChars: 4000 }), contextWindow: 128_000 },
 * });
 * ```
 * @module
 */
export { DEFAULT_SUMMARY_MAX_CHARS, ExtractiveSummarizer, type ExtractiveSummarizerOptions } from "./extractive.ts";
