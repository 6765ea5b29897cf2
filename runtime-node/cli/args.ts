/**
 * Argument parsing: the global options (`--root DIR`, `--json`, `--help`) anywhere
 * before `--`, then one command's options and positionals as its spec declares them.
 * Every mistake is a {@linkcode UsageError} (exit 2).
 *
 * @module
 */
import { UsageError } from "./exit.ts";

/** One option of a command: a flag, or an option taking the next argument as its value. */
export interface OptionSpec {
  readonly type: "boolean" | "string";
  /** Placeholder of the value in help texts (`T`, `SEQ`). */
  readonly value?: string;
  readonly description: string;
}

/** What a command accepts. */
export interface ArgsSpec {
  /** Required positionals, in order, by their help name (`REF`). */
  readonly positionals: readonly string[];
  /** Positionals that may be left out, after the required ones. */
  readonly optionalPositionals?: readonly string[];
  readonly options: Readonly<Record<string, OptionSpec>>;
}

/** The global options of docs/CLI.md. */
export interface GlobalOptions {
  root: string | undefined;
  /** `--store URL`: a `postgres://` store instead of a folder. */
  store: string | undefined;
  /** `--key-file FILE`: the key file of an encrypted store. */
  keyFile: string | undefined;
  json: boolean;
  help: boolean;
}

/** A parsed command line: globals, the command name and its remaining arguments. */
export interface SplitArgs {
  readonly globals: GlobalOptions;
  readonly command: string | undefined;
  readonly rest: readonly string[];
}

/** A command's parsed arguments. */
export interface ParsedArgs {
  readonly positionals: readonly string[];
  readonly options: Readonly<Record<string, string | boolean | undefined>>;
}

/**
 * Takes the global options that come before the command, and the command name.
 *
 * @throws {UsageError} for an unknown option before the command or `--root` without a value.
 */
export function splitArgs(argv: readonly string[]): SplitArgs {
  const globals: GlobalOptions = { root: undefined, store: undefined, keyFile: undefined, json: false, help: false };
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      i += 1;
      break;
    }
    const taken = takeGlobal(argv, i, globals);
    if (taken > 0) {
      i += taken - 1;
      continue;
    }
    if (arg.startsWith("-") && arg !== "-") throw new UsageError(`unknown option ${JSON.stringify(arg)} (see sessionfold --help)`, { option: arg });
    break;
  }
  return { globals, command: argv[i], rest: argv.slice(i + 1) };
}

/**
 * Parses a command's arguments by its spec; global options are accepted among them too.
 *
 * @throws {UsageError} for an unknown option, a missing value or positional, or an extra argument.
 */
export function parseCommandArgs(command: string, rest: readonly string[], spec: ArgsSpec, globals: GlobalOptions): ParsedArgs {
  const positionals: string[] = [];
  const options: Record<string, string | boolean | undefined> = {};
  let optionsEnded = false;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (optionsEnded || !arg.startsWith("-") || arg === "-") {
      positionals.push(arg);
      continue;
    }
    if (arg === "--") {
      optionsEnded = true;
      continue;
    }
    const taken = takeGlobal(rest, i, globals);
    if (taken > 0) {
      i += taken - 1;
      continue;
    }
    const eq = arg.indexOf("=");
    const name = arg.startsWith("--") ? (eq > 0 ? arg.slice(2, eq) : arg.slice(2)) : "";
    const option = Object.hasOwn(spec.options, name) ? spec.options[name] : undefined;
    if (!option) throw new UsageError(`${command}: unknown option ${JSON.stringify(arg)} (see sessionfold ${command} --help)`, { option: arg });
    if (options[name] !== undefined) throw new UsageError(`${command}: option --${name} is given twice`, { option: `--${name}` });
    if (option.type === "boolean") {
      if (eq > 0) throw new UsageError(`${command}: option --${name} takes no value`, { option: `--${name}` });
      options[name] = true;
    } else if (eq > 0) {
      options[name] = arg.slice(eq + 1);
    } else {
      const value = rest[i + 1];
      if (value === undefined) throw new UsageError(`${command}: option --${name} needs a value ${option.value ?? ""}`.trimEnd(), { option: `--${name}` });
      options[name] = value;
      i += 1;
    }
  }
  if (globals.help) return { positionals, options };
  const required = spec.positionals;
  const optional = spec.optionalPositionals ?? [];
  if (positionals.length < required.length) {
    throw new UsageError(`${command}: missing ${required.slice(positionals.length).join(" ")} (see sessionfold ${command} --help)`, {
      missing: required.slice(positionals.length),
    });
  }
  if (positionals.length > required.length + optional.length) {
    const extra = positionals[required.length + optional.length]!;
    throw new UsageError(`${command}: unexpected argument ${JSON.stringify(extra)} (see sessionfold ${command} --help)`, { argument: extra });
  }
  return { positionals, options };
}

/** Consumes a global option at `argv[i]`; returns how many arguments it took (0 when it is none). */
function takeGlobal(argv: readonly string[], i: number, globals: GlobalOptions): number {
  const arg = argv[i]!;
  if (arg === "--json") {
    globals.json = true;
    return 1;
  }
  if (arg === "--help" || arg === "-h") {
    globals.help = true;
    return 1;
  }
  if (arg === "--store" || arg.startsWith("--store=")) {
    const value = arg === "--store" ? argv[i + 1] : arg.slice("--store=".length);
    if (value === undefined || value === "") throw new UsageError("option --store needs a value URL (postgres://…)", { option: "--store" });
    globals.store = value;
    return arg === "--store" ? 2 : 1;
  }
  if (arg === "--key-file" || arg.startsWith("--key-file=")) {
    const value = arg === "--key-file" ? argv[i + 1] : arg.slice("--key-file=".length);
    if (value === undefined || value === "") throw new UsageError("option --key-file needs a value FILE", { option: "--key-file" });
    globals.keyFile = value;
    return arg === "--key-file" ? 2 : 1;
  }
  if (arg === "--root") {
    const value = argv[i + 1];
    if (value === undefined || value === "") throw new UsageError("option --root needs a value DIR", { option: "--root" });
    globals.root = value;
    return 2;
  }
  if (arg.startsWith("--root=")) {
    const value = arg.slice("--root=".length);
    if (value === "") throw new UsageError("option --root needs a value DIR", { option: "--root" });
    globals.root = value;
    return 1;
  }
  return 0;
}
