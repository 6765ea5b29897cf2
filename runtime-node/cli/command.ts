/**
 * The shape of one CLI command and what it runs with.
 *
 * @module
 */
import { parseSessionRef, type SessionRef } from "../../core/reader.ts";
import type { ArgsSpec, ParsedArgs } from "./args.ts";
import type { CliIo } from "./io.ts";
import type { Output } from "./output.ts";
import type { Store } from "./store.ts";

/** What a command runs with. */
export interface CommandContext {
  readonly io: CliIo;
  readonly out: Output;
  readonly store: Store;
  readonly args: ParsedArgs;
}

/**
 * One command's entry in the command table (`commands/mod.ts`): what `sessionfold --help`
 * lists, and how to load the rest. Loading is by name, on use: help and a usage error before
 * the command name never load a command, nor the core.
 */
export interface CommandEntry {
  readonly name: string;
  /** `show REF`: the usage line without the program name. */
  readonly synopsis: string;
  /** One line for the command list. */
  readonly summary: string;
  /**
   * Changes nothing under the store (docs/CLI.md's read-only commands): it reads on the
   * calling thread, without starting the storage worker.
   */
  readonly readOnly?: true;
  /**
   * Runs with V8's optimizing compiler off, when the process is the command's own
   * (`CliIo.ownsProcess`): its JavaScript is a short read whose every function runs a few
   * thousand times at most, where TurboFan's compiles (on a thread of their own) cost more CPU
   * than they save, and a compile waiting for a garbage collection while the main thread drains
   * the platform's tasks can hang the process at its end (docs/decisions.md "show without the
   * optimizing compiler").
   */
  readonly unoptimized?: true;
  /** Imports the command's module. */
  load(): Promise<Command>;
}

/** A loaded command: its help, its arguments and what it does. Returns the exit status. */
export interface Command {
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

/** A repeatable option's values, in the order given; none when absent. */
export function repeatedOption(args: ParsedArgs, name: string): readonly string[] {
  const value = args.options[name];
  return Array.isArray(value) ? value : [];
}

/** A string option's value, `undefined` when absent. */
export function stringOption(args: ParsedArgs, name: string): string | undefined {
  const value = args.options[name];
  return typeof value === "string" ? value : undefined;
}
