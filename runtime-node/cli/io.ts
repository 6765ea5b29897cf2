/**
 * What the CLI talks to: its output streams, environment and terminal, injectable so
 * tests run `main()` in-process, the progress bar drawn on it, and the escaping of what
 * reaches it as readable text. Imports nothing of the core: `--help` runs with it alone.
 *
 * @module
 */

/** Every control character: C0, DEL and C1 (ESC among them). */
// deno-lint-ignore no-control-regex -- matching control characters is the point: they are what gets escaped
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]/gu;
/** {@linkcode CONTROLS} but for `\t` and `\n`, a text's own tabs and lines. */
// deno-lint-ignore no-control-regex -- as above
const CONTROLS_BUT_LINES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/gu;

/**
 * `text` as readable output may show it on a terminal (docs/CLI.md "Usage"): every control
 * character (C0, DEL, C1; ESC always) written `\uXXXX` as error messages quote a file, so stored
 * text can neither move the cursor, retitle the window nor clear the screen; everything else,
 * non-ASCII included, is left as it is. `\n` and `\t` stay unless `oneLine` (a title in a
 * table's cell, where they would break the row).
 *
 * @example
 * ```ts
 * escapeControls("evil\u001b]0;pwned\u0007 title"); // "evil\\u001b]0;pwned\\u0007 title"
 * escapeControls("two\nlines"); // "two\nlines"
 * escapeControls("two\nlines", { oneLine: true }); // "two\\u000alines"
 * ```
 */
export function escapeControls(text: string, { oneLine = false }: { oneLine?: boolean } = {}): string {
  return text.replace(oneLine ? CONTROLS : CONTROLS_BUT_LINES, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

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
