/**
 * The AI SDK's own client-side reader of the UI message stream, in a module of its own so
 * that the page loads it (and the part of `ai` it needs) with the first turn, not at start.
 */
export { readUIMessageStream } from "ai";
