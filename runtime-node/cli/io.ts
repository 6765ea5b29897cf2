/**
 * What the CLI talks to: its output streams, environment and terminal, injectable so
 * tests run `main()` in-process, and the progress bar drawn on it. Imports nothing of the
 * core: `--help` runs with it alone.
 *
 * @module
 */

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
  /**
   * Reach the store through the storage worker. Default: the commands that change the store
   * do, read-only commands read on the calling thread.
   */
  readonly worker?: boolean;
  /** fsync writes. Default `true`; tests may turn it off for speed. */
  readonly fsync?: boolean;
  /**
   * This process runs this one command line and ends (`bin/sessionfold.mjs`, through
   * {@linkcode processIo}), so a command may tune V8 for itself (`CommandEntry.unoptimized`).
   * Default `false`: `main()` called in a host's or a test's process changes nothing of it.
   */
  readonly ownsProcess?: boolean;
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
    ownsProcess: true,
  };
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
