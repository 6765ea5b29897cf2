/**
 * The composer: a pure function from a session snapshot (instruction, latest summary
 * footer, Active) to the exact input of one model request. It reads nothing else and
 * writes nothing: stored history is never changed by composing. Provider context of
 * another provider identity is left out and interrupted tool calls are closed, both
 * reported so a host can surface them.
 *
 * @example
 * ```ts
 * import { compose } from "sessionfold";
 * import type { ComposerState } from "sessionfold";
 * declare const state: ComposerState;
 * const { instruction, footer, active, identity } = state;
 * const { input, omittedContext, closedToolCalls } = compose({ instruction, footer, active, identity });
 * ```
 * @module
 */
export * from "./types.ts";
export * from "./identity.ts";
export * from "./compose.ts";
