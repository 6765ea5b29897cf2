/**
 * Every command of the CLI, in the order `--help` lists them (docs/CLI.md's table).
 *
 * @module
 */
import type { Command } from "../command.ts";
import { compose } from "./compose.ts";
import { archive, fork, unlock } from "./lifecycle.ts";
import { ls } from "./list.ts";
import { messages } from "./messages.ts";
import { show } from "./show.ts";
import { verify } from "./verify.ts";
import { append, compact, create } from "./write.ts";
import { exportCommand, importCommand } from "./interop.ts";
import { repair } from "./repair.ts";
import { encrypt, keygen, rekey } from "./keys.ts";

/** Every command, in the order `--help` lists them. */
export const COMMANDS: readonly Command[] = [
  ls,
  show,
  compose,
  messages,
  verify,
  repair,
  create,
  append,
  compact,
  fork,
  archive,
  unlock,
  importCommand,
  exportCommand,
  keygen,
  encrypt,
  rekey,
];

/** The command named `name`, if there is one. */
export function findCommand(name: string): Command | undefined {
  return COMMANDS.find((command) => command.name === name);
}
