/**
 * What the CLI talks to: its output streams, environment and terminal, injectable so
 * tests run `main()` in-process; and the one place results are written (JSON or text).
 *
 * @module
 */
import { describeLockOwner } from "../../core/internal.ts";
import type { StaleLockReclaimed } from "../../core/mod.ts";
import { EXIT } from "./exit.ts";

/** The outside world of one CLI invocation. Every field but the writers is optional. */
export interface CliIo {
  /** Receives stdout text. */
  stdout(text: string): void;
  /** Receives stderr text. */
  stderr(text: string): void;
  /** Environment (`SESSIONFOLD_HOME`); default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Whether stderr is a terminal: progress bars are drawn only then. Default `false`. */
  readonly stderrIsTTY?: boolean;
  /** Whether stdout is a terminal. Default `false`. */
  readonly stdoutIsTTY?: boolean;
  /** Folder a relative `--root` is resolved against; default `process.cwd()`. */
  readonly cwd?: string;
  /** Reach the store through the storage worker (the real path). Default `true`. */
  readonly worker?: boolean;
  /** fsync writes. Default `true`; tests may turn it off for speed. */
  readonly fsync?: boolean;
}

/** The process's own streams, environment and terminal. */
export function processIo(): CliIo {
  return {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
    env: process.env,
    stderrIsTTY: process.stderr.isTTY === true,
    stdoutIsTTY: process.stdout.isTTY === true,
    cwd: process.cwd(),
  };
}

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
      const shown = text();
      if (shown !== "") this.io.stdout(shown.endsWith("\n") ? shown : `${shown}\n`);
    }
    return EXIT.ok;
  }

  /** A line for the user on stderr (notes, warnings), in both modes. */
  note(line: string): void {
    this.io.stderr(`${line}\n`);
  }

  /**
   * A dead writer's lock taken over: said on stderr at once, and listed in the JSON result
   * as `stale_locks_reclaimed` (docs/CLI.md).
   */
  staleLockReclaimed(event: StaleLockReclaimed): void {
    this.#reclaimed.push(event);
    this.note(`note stale_lock_reclaimed: ${event.ref}: took over the writer.lock of a dead writer (${describeLockOwner(event.owner)})`);
  }

  #withReclaimed(value: unknown): unknown {
    if (this.#reclaimed.length === 0 || typeof value !== "object" || value === null || Array.isArray(value)) return value;
    return { ...value, stale_locks_reclaimed: this.#reclaimed.map(({ ref, path, owner }) => ({ ref, path, owner })) };
  }
}

/**
 * A progress bar on stderr, drawn only when stderr is a terminal; otherwise every call
 * does nothing, so pipes and logs never receive control characters.
 */
export class Progress {
  readonly #io: CliIo;
  readonly #label: string;
  readonly #enabled: boolean;
  #drawn = false;
  #lastWidth = -1;

  constructor(io: CliIo, label: string) {
    this.#io = io;
    this.#label = label;
    this.#enabled = io.stderrIsTTY === true;
  }

  /** Redraws the bar when the filled width changes. */
  update(done: number, total: number): void {
    if (!this.#enabled || total <= 0) return;
    const width = 30;
    const filled = Math.min(width, Math.round((done / total) * width));
    if (filled === this.#lastWidth && done !== total) return;
    this.#lastWidth = filled;
    this.#drawn = true;
    this.#io.stderr(`\r${this.#label} [${"#".repeat(filled)}${" ".repeat(width - filled)}] ${done}/${total}\x1b[K`);
  }

  /** Clears the bar's line. */
  end(): void {
    if (this.#drawn) this.#io.stderr("\r\x1b[K");
    this.#drawn = false;
  }
}
