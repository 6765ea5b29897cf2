/**
 * The command table: every command of the CLI, in the order `--help` lists them
 * (docs/CLI.md's table), each with what the list shows and how its module is loaded. Only
 * this table is loaded for `--help` and for a usage error before the command name; a
 * command's module, and with it the core, is imported when that command is named. A new
 * command is one entry here and its own file.
 *
 * @module
 */
import type { CommandEntry } from "../command.ts";

/** Every command, in the order `--help` lists them. */
export const COMMANDS: readonly CommandEntry[] = [
  {
    name: "ls",
    synopsis: "ls [--agent A] [--workspace W] [--archived] [--limit N] [--cursor C]",
    summary: "list sessions from the catalog, newest first, a page at a time",
    readOnly: true,
    load: async () => (await import("./list.ts")).ls,
  },
  {
    name: "show",
    synopsis: "show REF",
    summary: "what is stored and what recovery found (read-only)",
    readOnly: true,
    unoptimized: true,
    load: async () => (await import("./show.ts")).show,
  },
  {
    name: "compose",
    synopsis: "compose REF",
    summary: "exactly what the next model request would read (read-only)",
    readOnly: true,
    load: async () => (await import("./compose.ts")).compose,
  },
  {
    name: "messages",
    synopsis: "messages REF [--before SEQ]",
    summary: "Active's messages, or an older segment's (read-only)",
    readOnly: true,
    load: async () => (await import("./messages.ts")).messages,
  },
  {
    name: "verify",
    synopsis: "verify [REF] [--repair-catalog]",
    summary: "check one or every session, reading every file (read-only but --repair-catalog)",
    readOnly: true,
    load: async () => (await import("./verify.ts")).verify,
  },
  {
    name: "repair",
    synopsis: "repair REF [--apply]",
    summary: "move bad lines into quarantine and rebuild meta.json (a plan unless --apply)",
    load: async () => (await import("./repair.ts")).repair,
  },
  { name: "new", synopsis: "new REF [--title T]", summary: "create an empty session", load: async () => (await import("./write.ts")).create },
  {
    name: "append",
    synopsis: "append REF --role user|assistant --text T",
    summary: "commit one text message",
    load: async () => (await import("./write.ts")).append,
  },
  {
    name: "compact",
    synopsis: "compact REF",
    summary: "compact Active with the configured summarizer",
    load: async () => (await import("./write.ts")).compact,
  },
  {
    name: "fork",
    synopsis: "fork REF --as SESSION_ID",
    summary: "copy the full history into a new session",
    load: async () => (await import("./lifecycle.ts")).fork,
  },
  { name: "archive", synopsis: "archive REF", summary: "move the session to archived-sessions/", load: async () => (await import("./lifecycle.ts")).archive },
  {
    name: "delete",
    synopsis: "delete REF [--archived]",
    summary: "delete the session and its whole history, under its lock",
    load: async () => (await import("./lifecycle.ts")).deleteCommand,
  },
  {
    name: "purge",
    synopsis: "purge --older-than D [--keep-newest N] [--agent A] [--workspace W] [--archived] [--dry-run]",
    summary: "delete sessions by last activity or count, only when run (--dry-run lists)",
    load: async () => (await import("./purge.ts")).purge,
  },
  {
    name: "unlock",
    synopsis: "unlock REF --force",
    summary: "remove a writer lock after printing its owner",
    load: async () => (await import("./lifecycle.ts")).unlock,
  },
  {
    name: "import",
    synopsis: "import FILE [--from deepcode|rho-snapshot|rho-jsonl|pi|codex|claude-code] --into REF",
    summary: "import another system's session",
    load: async () => (await import("./interop.ts")).importCommand,
  },
  {
    name: "export",
    synopsis: "export REF --to deepcode|rho-snapshot|pi [--redact] [--out FILE]",
    summary: "export the full history",
    readOnly: true,
    load: async () => (await import("./interop.ts")).exportCommand,
  },
  {
    name: "serve",
    synopsis: "serve [--host H] [--port P] [--token-file F] [--cors-origin ORIGIN]…",
    summary: "run the sync server over the store",
    load: async () => (await import("./sync.ts")).serve,
  },
  {
    name: "sync",
    synopsis: "sync [REF] --remote URL|DIR|postgres://… [--token-file F]",
    summary: "bring the store and a remote to the same state",
    load: async () => (await import("./sync.ts")).sync,
  },
  {
    name: "keygen",
    synopsis: "keygen --out FILE",
    summary: "write a new key file (mode 0600) for an encrypted store",
    load: async () => (await import("./keys.ts")).keygen,
  },
  {
    name: "encrypt",
    synopsis: "encrypt",
    summary: "encrypt a store in the clear in place with the --key-file (crash-safe)",
    load: async () => (await import("./keys.ts")).encrypt,
  },
  {
    name: "rekey",
    synopsis: "rekey",
    summary: "rotate an encrypted store to a new key (re-wraps data keys, rewrites no history)",
    load: async () => (await import("./keys.ts")).rekey,
  },
];

/** The command named `name`, if there is one. */
export function findCommand(name: string): CommandEntry | undefined {
  return COMMANDS.find((command) => command.name === name);
}
