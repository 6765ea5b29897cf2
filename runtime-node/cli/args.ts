/**
 * Argument parsing: the global options (`--root DIR`, `--store URL`, `--json`, `--help`, `--version`)
 * anywhere before `--`, then one command's options and positionals as its spec declares them.
 * `node:util`'s `parseArgs` splits the line into tokens; the rules of docs/CLI.md are checked
 * here on those tokens, so every mistake is a {@linkcode UsageError} (exit 2) that quotes the
 * argument as typed.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { UsageError } from "./exit.ts";

/** One option of a command: a flag, or an option taking the next argument as its value. */
export interface OptionSpec {
  readonly type: "boolean" | "string";
  /** Placeholder of the value in help texts (`T`, `SEQ`). */
  readonly value?: string;
  readonly description: string;
  /** A string option that may be given more than once; its values, in order, are a list. */
  readonly repeatable?: true;
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
  version: boolean;
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
  readonly options: Readonly<Record<string, string | boolean | readonly string[] | undefined>>;
}

type Token = ReturnType<typeof tokenize>[number];
type OptionToken = Extract<Token, { kind: "option" }>;

const GLOBAL_OPTIONS = {
  root: { type: "string", value: "DIR" },
  store: { type: "string", value: "URL (postgres://…)" },
  "key-file": { type: "string", value: "FILE" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
} as const;

/**
 * Splits a line into tokens. Not strict: an unknown option becomes a token that the callers
 * refuse with the argument as typed, and a string option takes the next argument as its value
 * even when it starts with a dash (`--text --json`, `--before -1`), as the CLI always did.
 */
function tokenize(args: readonly string[], options: Record<string, { type: "boolean" | "string"; short?: string }>) {
  return parseArgs({ args: [...args], options, strict: false, allowPositionals: true, tokens: true }).tokens;
}

/**
 * Takes the global options that come before the command, and the command name.
 *
 * @throws {UsageError} for an unknown option before the command or `--root` without a value.
 */
export function splitArgs(argv: readonly string[]): SplitArgs {
  const globals: GlobalOptions = { root: undefined, store: undefined, keyFile: undefined, json: false, help: false, version: false };
  for (const token of tokenize(argv, GLOBAL_OPTIONS)) {
    if (token.kind === "option-terminator") return { globals, command: argv[token.index + 1], rest: argv.slice(token.index + 2) };
    if (token.kind === "positional") return { globals, command: token.value, rest: argv.slice(token.index + 1) };
    if (!takeGlobal(token, globals)) {
      throw new UsageError(`unknown option ${JSON.stringify(argv[token.index])} (see sessionfold --help)`, { option: argv[token.index] });
    }
  }
  return { globals, command: undefined, rest: [] };
}

/**
 * Parses a command's arguments by its spec; global options are accepted among them too.
 *
 * @throws {UsageError} for an unknown option, a missing value or positional, or an extra argument.
 */
export function parseCommandArgs(command: string, rest: readonly string[], spec: ArgsSpec, globals: GlobalOptions): ParsedArgs {
  const positionals: string[] = [];
  const options: Record<string, string | boolean | string[] | undefined> = {};
  const accepted = { ...Object.fromEntries(Object.entries(spec.options).map(([name, option]) => [name, { type: option.type }])), ...GLOBAL_OPTIONS };
  for (const token of tokenize(rest, accepted)) {
    if (token.kind === "positional") positionals.push(token.value);
    if (token.kind !== "option" || takeGlobal(token, globals)) continue;
    // Commands have long options only: `-x` is unknown even where an option is called `x`.
    const option = token.rawName.startsWith("--") && Object.hasOwn(spec.options, token.name) ? spec.options[token.name] : undefined;
    if (!option) {
      throw new UsageError(`${command}: unknown option ${JSON.stringify(rest[token.index])} (see sessionfold ${command} --help)`, {
        option: rest[token.index],
      });
    }
    const name = `--${token.name}`;
    if (options[token.name] !== undefined && !option.repeatable) throw new UsageError(`${command}: option ${name} is given twice`, { option: name });
    if (option.type === "boolean" && token.value !== undefined) throw new UsageError(`${command}: option ${name} takes no value`, { option: name });
    if (option.type === "string" && token.value === undefined) {
      throw new UsageError(`${command}: option ${name} needs a value ${option.value ?? ""}`.trimEnd(), { option: name });
    }
    if (option.repeatable) options[token.name] = [...(options[token.name] as string[] | undefined ?? []), token.value!];
    else options[token.name] = token.value ?? true;
  }
  if (globals.help || globals.version) return { positionals, options };
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

/** Applies a global option's token; `false` when the token is not one. */
function takeGlobal(token: OptionToken, globals: GlobalOptions): boolean {
  if (!Object.hasOwn(GLOBAL_OPTIONS, token.name)) return false;
  const name = token.name as keyof typeof GLOBAL_OPTIONS;
  const option = GLOBAL_OPTIONS[name];
  if (option.type === "boolean") {
    if (token.value !== undefined) throw new UsageError(`option --${name} takes no value`, { option: `--${name}` });
    globals[name as "json" | "help" | "version"] = true;
    return true;
  }
  if (token.value === undefined || token.value === "") throw new UsageError(`option --${name} needs a value ${option.value}`, { option: `--${name}` });
  if (name === "key-file") globals.keyFile = token.value;
  else globals[name as "root" | "store"] = token.value;
  return true;
}
