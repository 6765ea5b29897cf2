/**
 * The check of `Session.run`'s arguments from plain JavaScript (docs/decisions.md "The public
 * API checks its arguments"): what the run cannot start from is an `InvalidInputError` saying
 * what was expected, before the session is locked, never a `TypeError` wrapped as `internal`.
 *
 * @module
 */
import { assertFields, assertMethods, isPlainObject, type KnownFields, knownOptions, wrongArgument } from "../schema/arguments.ts";
import type { RunEvent } from "./run-events.ts";
import type { RunInput, RunOptions } from "./run.ts";

const RUN_OPTION_FIELDS: KnownFields<RunOptions> = { provider: true, tools: true, signal: true, onEvent: true };

/**
 * Refuses what `run` cannot start from: an input that is not text, `{ parts }` or absent, options
 * that are not an object with a provider, a field `run` does not know (docs/decisions.md "Unknown option fields are
 * refused"), tools that are not an array, a signal that is not an `AbortSignal` (by shape: one of another realm
 * passes), an `onEvent` that is not a function.
 *
 * @throws {InvalidInputError} naming the argument, what was expected and what was found.
 */
export function assertRunArguments(input: RunInput, options: RunOptions): void {
  if (input !== undefined && typeof input !== "string" && !isPlainObject(input)) throw wrongArgument("run(input)", "text, { parts } or nothing", input);
  knownOptions(options, "run(input, options)", RUN_OPTION_FIELDS, "an object { provider, tools?, signal?, onEvent? }");
  assertMethods(options.provider, "run(input, options).provider", "a Provider { identity, stream }", ["stream"]);
  assertFields(options, "run(input, options)", { tools: "array", signal: "abort-signal", onEvent: "function" });
}

/** The run's `onEvent`, when `options` has one that is a function (a run refused by {@linkcode assertRunArguments} emits nothing). */
export function onEventOf(options: RunOptions): ((event: RunEvent) => void) | undefined {
  return isPlainObject(options) && typeof options.onEvent === "function" ? options.onEvent : undefined;
}
