/**
 * The `sessionfold` command line (docs/CLI.md): `main(argv, io)` parses, runs one command and
 * returns its exit status. Everything it touches comes through `io`, so tests run it
 * in-process; `bin/sessionfold.mjs` runs it for `npx sessionfold`. What it imports up front
 * is the command table, the argument parser, the help texts and the typed errors, none of
 * them the core: `--help`, `--version` and a usage error before the command name print
 * without loading it, and a command's module (with the core) is imported once it is named.
 *
 * @example
 * ```ts
 * const status = await main(["--root", "/tmp/store", "--json", "ls"]);
 * ```
 * @module
 */
import { parseCommandArgs, splitArgs } from "./args.ts";
import { COMMANDS, findCommand } from "./commands/mod.ts";
import { errorDocument, errorLine, EXIT, exitStatusOf, toCliError, UsageError } from "./exit.ts";
import { commandHelp, programHelp } from "./help.ts";
import { type CliIo, processIo } from "./io.ts";
import { packageVersion } from "./version.ts";
import type { Store } from "./store.ts";

export type { CliIo } from "./io.ts";

/**
 * Runs one `sessionfold` command line.
 *
 * @param argv the arguments after the program name.
 * @param io where output goes and what the environment is; default the process's.
 * @returns the exit status (docs/CLI.md): 0 ok, 1 fatal diagnostics, 2 usage, 3 locked, 4 bad input, 5 other.
 */
export async function main(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  // Until the line is parsed, `--json` anywhere before `--` decides how a usage error is printed.
  let json = argv.slice(0, argv.includes("--") ? argv.indexOf("--") : argv.length).includes("--json");
  let store: Store | undefined;
  try {
    const { globals, command, rest } = splitArgs(argv);
    json ||= globals.json;
    if (command === "help") {
      const topic = rest[0] === undefined ? undefined : findCommand(rest[0]);
      if (rest[0] !== undefined && !topic) throw unknownCommand(rest[0]);
      io.stdout(topic ? commandHelp(topic, await topic.load()) : programHelp(COMMANDS));
      return EXIT.ok;
    }
    if (command === undefined) {
      if (globals.help) {
        io.stdout(programHelp(COMMANDS));
        return EXIT.ok;
      }
      if (globals.version) return printVersion(io, json);
      throw new UsageError("missing COMMAND (see sessionfold --help)");
    }
    const entry = findCommand(command);
    if (!entry) throw unknownCommand(command);
    // Before the command's code is loaded, so that none of it is ever queued for TurboFan.
    if (entry.unoptimized && io.ownsProcess) (await import("node:v8")).setFlagsFromString("--no-opt");
    const selected = await entry.load();
    const args = parseCommandArgs(entry.name, rest, selected.spec, globals);
    json = globals.json; // exact now: a `--json` that was an option's value (`--text --json`) is not the flag
    if (globals.help) {
      io.stdout(commandHelp(entry, selected));
      return EXIT.ok;
    }
    if (globals.version) return printVersion(io, json);
    const [{ Output }, { Store, resolveStore }] = await Promise.all([import("./output.ts"), import("./store.ts")]);
    const out = new Output(io, json);
    store = new Store(await resolveStore(globals, io), io, (event) => out.staleLockReclaimed(event), entry.readOnly === true);
    return await selected.run({ io, out, store, args });
  } catch (thrown) {
    const error = toCliError(thrown);
    io.stderr(`${errorLine(error)}\n`);
    if ((io.env ?? process.env)["SESSIONFOLD_DEBUG"] && thrown instanceof Error && thrown.stack) io.stderr(`${thrown.stack}\n`);
    if (json) io.stdout(`${JSON.stringify(errorDocument(error), null, 2)}\n`);
    return exitStatusOf(error.code);
  } finally {
    await store?.close().catch(() => undefined);
  }
}

function unknownCommand(name: string): UsageError {
  return new UsageError(`unknown command ${JSON.stringify(name)} (see sessionfold --help)`, { command: name });
}

/** `--version`: `sessionfold 0.1.0`, or with `--json` `{"version":"0.1.0"}`. */
function printVersion(io: CliIo, json: boolean): number {
  const version = packageVersion();
  io.stdout(json ? `${JSON.stringify({ version }, null, 2)}\n` : `sessionfold ${version}\n`);
  return EXIT.ok;
}
