/**
 * Sealed exports on the command line (docs/FORMAT.md "Sealed exports"): the passphrase is the
 * first line of `--passphrase-file`; `import` opens a sealed file with it and imports the export
 * inside like any other file, its format detected from its content (`export` seals with it).
 *
 * @module
 */
import { basename } from "node:path";
import {
  detectSessionFormat,
  type Diagnostic,
  type FormatDetection,
  InvalidInputError,
  isSealedExport,
  KeyRequiredError,
  openSealedExport,
  type PortableSession,
  readClaudeCode,
  readCodex,
  readDeepCode,
  readPi,
  readRhoJsonl,
  readRhoSnapshot,
  type RhoTreeSummary,
  SEALED_EXPORT_FORMAT,
} from "../../core/mod.ts";
import { openInputFile } from "../fs-boundary.ts";

/** The most bytes a passphrase file may hold (one line of text). */
const MAX_PASSPHRASE_FILE_BYTES = 4096;

/**
 * The passphrase in `file`: its first line, without the line break; a file that is empty,
 * over 4 KiB, a FIFO or a device is refused.
 */
export async function readPassphraseFile(file: string): Promise<string> {
  const { handle, size } = await openInputFile(file);
  try {
    if (size > MAX_PASSPHRASE_FILE_BYTES) {
      throw new InvalidInputError(`${file}: a passphrase file holds one line; found ${size} bytes (at most ${MAX_PASSPHRASE_FILE_BYTES})`, { file });
    }
    const passphrase = new TextDecoder().decode(await handle.readFile()).split(/\r?\n/)[0] ?? "";
    if (passphrase === "") throw new InvalidInputError(`${file}: the passphrase file's first line is empty`, { file });
    return passphrase;
  } finally {
    await handle.close();
  }
}

/**
 * Whether `file` may be a sealed export: its first 4 KiB name the format (a sealed export
 * starts with it), so a large file of another kind is never read whole to find out.
 */
export async function looksSealed(file: string): Promise<boolean> {
  const { handle } = await openInputFile(file);
  try {
    const head = new Uint8Array(4096);
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    return new TextDecoder().decode(head.subarray(0, bytesRead)).includes(SEALED_EXPORT_FORMAT);
  } finally {
    await handle.close();
  }
}

/**
 * The export inside `bytes` when they are a sealed export (`undefined` when they are not),
 * opened with the passphrase in `passphraseFile`.
 *
 * @throws {KeyRequiredError} when the file is sealed and no passphrase file is given.
 * @throws {WrongKeyError} when the passphrase does not open it.
 * @throws {InvalidInputError} when a passphrase file is given for a file that is not sealed.
 */
export async function openSealedInput(file: string, bytes: Uint8Array, passphraseFile: string | undefined): Promise<Uint8Array | undefined> {
  if (!isSealedExport(bytes)) {
    if (passphraseFile === undefined) return undefined;
    throw new InvalidInputError(`${basename(file)}: --passphrase-file was given, but the file is not a sealed export`, { file });
  }
  if (passphraseFile === undefined) {
    throw new KeyRequiredError(`${basename(file)} is a sealed export: give its passphrase with --passphrase-file FILE`, { file });
  }
  return openSealedExport(bytes, await readPassphraseFile(passphraseFile), basename(file));
}

/** What reading an opened export gives the import command. */
export interface OpenedImport {
  readonly session: PortableSession;
  readonly diagnostics: readonly Diagnostic[];
  readonly tree?: RhoTreeSummary;
  readonly detected?: FormatDetection;
}

/**
 * Reads the export a sealed file held, in `format` or, without one, the format detected from
 * its first line.
 *
 * @throws {InvalidInputError} when its format cannot be told.
 */
export async function readOpenedImport(file: string, bytes: Uint8Array, format: string | undefined, branch: string | undefined): Promise<OpenedImport> {
  const detected = format === undefined ? detectSessionFormat(bytes.subarray(0, 64 * 1024)) : undefined;
  const chosen = format ?? detected?.format;
  const name = basename(file);
  const with_ = (read: Omit<OpenedImport, "detected">): OpenedImport => ({ ...read, ...(detected ? { detected } : {}) });
  switch (chosen) {
    case "pi":
      return with_(await readPi(bytes, name));
    case "codex":
      return with_(await readCodex(bytes, name));
    case "claude-code":
      return with_(await readClaudeCode(bytes, name));
    case "rho-snapshot":
      return with_({ session: readRhoSnapshot(bytes, name), diagnostics: [] });
    case "rho-jsonl":
      return with_(readRhoJsonl(bytes, name, branch !== undefined ? { branch } : {}));
    case "deepcode":
      return with_(readDeepCode({ file: name, bytes }));
    default:
      throw new InvalidInputError(`${name}: the sealed export opened, but the format of what it holds cannot be told from its first line; pass --from`, {
        file,
      });
  }
}
