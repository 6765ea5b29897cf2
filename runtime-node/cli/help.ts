/**
 * Usage texts: `sessionfold --help` (from the command table alone) and
 * `sessionfold COMMAND --help` (with the command's module loaded).
 *
 * @module
 */
import type { Command, CommandEntry } from "./command.ts";

const PROGRAM = "sessionfold";

/** The program's help: usage, every command, the global options, REF and exit statuses. */
export function programHelp(commands: readonly CommandEntry[]): string {
  const width = Math.max(...commands.map((c) => c.synopsis.length));
  return [
    `${PROGRAM}: look into, repair, move and script durable AI-agent sessions.`,
    "",
    `Usage: ${PROGRAM} [--root DIR] [--json] COMMAND …`,
    "",
    "Commands:",
    ...commands.map((c) => `  ${c.synopsis.padEnd(width)}  ${c.summary}`),
    "",
    "Global options:",
    "  --root DIR       the store (default $SESSIONFOLD_HOME, else ~/.sessionfold)",
    "  --store URL      a store in PostgreSQL instead: postgres://…[?schema=NAME] (default",
    "                   $SESSIONFOLD_STORE when --root is not given; needs the pg package)",
    "  --key-file FILE  the key file of an encrypted store (default $SESSIONFOLD_KEY_FILE);",
    "                   without it an encrypted store is refused (key-required, exit 4)",
    '  --json           the result as one JSON document on stdout; errors also as {"error":{…}}',
    "  -h, --help       this help; COMMAND --help for one command's",
    "  --version        the version of sessionfold",
    "",
    "REF is <agent_id>/<workspace_id>/<session_id>. Errors go to stderr as one line",
    "error[<code>]: <what and where>. Read-only commands (ls, show, compose, messages,",
    "verify without --repair-catalog, export, repair without --apply) never change a byte",
    "under --root; no --out FILE is ever written inside it.",
    "",
    "Exit status: 0 success; 1 a read-only check found fatal diagnostics, or sync left",
    "sessions unsynced (its conflicts); 2 bad usage;",
    "3 the session is locked by another writer or its revision moved; 4 bad input (invalid",
    "id, no such session, unknown schema version, corrupt file, an --out inside the store",
    "or in a missing folder); 5 anything else.",
    "",
  ].join("\n");
}

/** One command's help: usage, what it does and returns, its options. */
export function commandHelp(entry: CommandEntry, command: Command): string {
  const options = Object.entries(command.spec.options).map(([name, o]) => [`--${name}${o.value ? ` ${o.value}` : ""}`, o.description] as const);
  const width = Math.max(0, ...options.map(([flag]) => flag.length));
  return [
    `Usage: ${PROGRAM} [--root DIR] [--json] ${entry.synopsis}`,
    "",
    command.help,
    ...(options.length > 0 ? ["", "Options:", ...options.map(([flag, text]) => `  ${flag.padEnd(width)}  ${text}`)] : []),
    "",
  ].join("\n");
}
