/**
 * The one place a command's result is written: one JSON document with `--json`, else the
 * readable text; and the stale-lock notes that go with it. Readable text and notes reach the
 * terminal with every control character escaped (docs/CLI.md "Usage"): stored text, a title
 * or a message, cannot send it escape codes.
 *
 * @module
 */
import { describeLockOwner } from "../../core/reader.ts";
import type { StaleLockReclaimed } from "../../core/mod.ts";
import { EXIT } from "./exit.ts";
import { type CliIo, escapeControls } from "./io.ts";

/** Writes a command's result: one JSON document with `--json`, else the readable text. */
export class Output {
  readonly io: CliIo;
  readonly json: boolean;
  readonly #reclaimed: StaleLockReclaimed[] = [];

  constructor(io: CliIo, json: boolean) {
    this.io = io;
    this.json = json;
  }

  /** Writes `value` as JSON or the text `text()` makes, then returns exit status 0. */
  result(value: unknown, text: () => string): number {
    if (this.json) this.io.stdout(`${JSON.stringify(this.#withReclaimed(value), null, 2)}\n`);
    else {
      const shown = escapeControls(text());
      if (shown !== "") this.io.stdout(shown.endsWith("\n") ? shown : `${shown}\n`);
    }
    return EXIT.ok;
  }

  /** A line for the user on stderr (notes, warnings), in both modes. */
  note(line: string): void {
    this.io.stderr(`${escapeControls(line)}\n`);
  }

  /**
   * A dead writer's lock taken over: said on stderr at once, and listed in the JSON result
   * as `stale_locks_reclaimed` (docs/CLI.md).
   */
  staleLockReclaimed(event: StaleLockReclaimed): void {
    this.#reclaimed.push(event);
    this.note(`note stale_lock_reclaimed: ${event.refText}: took over the writer.lock of a dead writer (${describeLockOwner(event.owner)})`);
  }

  #withReclaimed(value: unknown): unknown {
    if (this.#reclaimed.length === 0 || typeof value !== "object" || value === null || Array.isArray(value)) return value;
    return { ...value, stale_locks_reclaimed: this.#reclaimed.map(({ refText, path, owner }) => ({ ref: refText, path, owner })) };
  }
}
