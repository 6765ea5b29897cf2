/**
 * The shape of one CLI command and what it runs with.
 *
 * @module
 */
import { parseSessionRef, type SessionRef } from "../../core/mod.ts";
import type { ArgsSpec, ParsedArgs } from "./args.ts";
import type { CliIo, Output } from "./io.ts";
import type { Store } from "./store.ts";

/** What a command runs with. */
export interface CommandContext {
  readonly io: CliIo;
  readonly out: Output;
  readonly store: Store;
  readonly args: ParsedArgs;
}

/** One command: its usage, its arguments and what it does. Returns the exit status. */
export interface Command {
  readonly name: string;
  /** `show REF`: the usage line without the program name. */
  readonly synopsis: string;
  /** One line for the command list. */
  readonly summary: string;
  /** More help: what the result is, option by option. */
  readonly help: string;
  readonly spec: ArgsSpec;
  run(context: CommandContext): Promise<number>;
}

/**
 * The positional at `index` parsed as a `REF` (`<agent_id>/<workspace_id>/<session_id>`).
 *
 * @throws {InvalidIdError} when it is not a valid reference: before any path is built.
 */
export function refArg(args: ParsedArgs, index = 0): SessionRef {
  return parseSessionRef(args.positionals[index]!);
}

/** A string option's value, `undefined` when absent. */
export function stringOption(args: ParsedArgs, name: string): string | undefined {
  const value = args.options[name];
  return typeof value === "string" ? value : undefined;
}
