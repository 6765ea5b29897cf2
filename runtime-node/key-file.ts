/**
 * Key files for encrypted stores on Node (docs/FORMAT.md "Encrypted stores", docs/CLI.md): a
 * small JSON file, mode `0600`, holding one or more 256-bit key-encryption keys by kid and
 * which one is current. `sessionfold keygen --out FILE` writes one; `--key-file FILE` (or
 * `SESSIONFOLD_KEY_FILE`) opens an encrypted store with it.
 *
 * ```json
 * {"format":"sessionfold-key-file","version":1,"current":"k_…","keys":{"k_…":"<32 bytes, base64>"}}
 * ```
 *
 * @module
 */
import { randomBytes } from "node:crypto";
import { open, readFile, rename, stat } from "node:fs/promises";
import { importKeyEncryptionKey, InvalidInputError, type KeyProvider, keyring } from "../core/mod.ts";

/** The content of a key file. */
export interface KeyFile {
  readonly format: "sessionfold-key-file";
  readonly version: 1;
  /** The kid new data keys are wrapped with. */
  readonly current: string;
  /** Every key by kid, base64 of 32 bytes. */
  readonly keys: Readonly<Record<string, string>>;
}

/** A new kid: `k_` and 12 random hex digits. */
function newKid(): string {
  return `k_${randomBytes(6).toString("hex")}`;
}

/** A key file holding one new random key. */
function newKeyFile(): KeyFile {
  const kid = newKid();
  return { format: "sessionfold-key-file", version: 1, current: kid, keys: { [kid]: randomBytes(32).toString("base64") } };
}

/**
 * `file` with one more new random key, made current (what a rotation starts from).
 *
 * @example
 * ```ts
 * const file = await readKeyFile("/tmp/store.key");
 * await replaceKeyFile("/tmp/store.key", withNewKey(file));
 * ```
 */
export function withNewKey(file: KeyFile): KeyFile {
  const kid = newKid();
  return { ...file, current: kid, keys: { ...file.keys, [kid]: randomBytes(32).toString("base64") } };
}

/**
 * Writes a new key file at `path` with mode `0600`; an existing file is never overwritten.
 *
 * @example
 * ```ts
 * const file = await writeNewKeyFile("/tmp/store.key");
 * console.log(file.current);
 * ```
 * @throws {InvalidInputError} when something is already at `path`.
 */
export async function writeNewKeyFile(path: string): Promise<KeyFile> {
  const file = newKeyFile();
  let handle;
  try {
    handle = await open(path, "wx", 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") {
      throw new InvalidInputError(`${path} already exists; a key file is never overwritten`, { file: path });
    }
    throw error;
  }
  try {
    await handle.writeFile(`${JSON.stringify(file, null, 2)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return file;
}

/**
 * Replaces the key file at `path` with `file`, atomically (a temporary file `0600`, synced, renamed over it).
 *
 * @example
 * ```ts
 * declare const file: KeyFile;
 * await replaceKeyFile("/tmp/store.key", withNewKey(file));
 * ```
 */
export async function replaceKeyFile(path: string, file: KeyFile): Promise<void> {
  const temp = `${path}.tmp-${randomBytes(4).toString("hex")}`;
  const handle = await open(temp, "wx", 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(file, null, 2)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, path);
}

/**
 * Reads a key file. A file that others than its owner may read is refused, as ssh refuses a
 * private key: the key would not be secret.
 *
 * @example
 * ```ts
 * const file = await readKeyFile("/tmp/store.key");
 * const provider = await keyProviderOf(file);
 * ```
 * @throws {InvalidInputError} naming the file when it is missing, readable by others or not a key file.
 */
export async function readKeyFile(path: string): Promise<KeyFile> {
  let text: string;
  try {
    const info = await stat(path);
    if ((info.mode & 0o077) !== 0) {
      throw new InvalidInputError(`${path}: a key file must be readable by its owner only (mode 0600), found ${(info.mode & 0o777).toString(8)}`, {
        file: path,
      });
    }
    text = await readFile(path, "utf8");
  } catch (error) {
    if (error instanceof InvalidInputError) throw error;
    throw new InvalidInputError(`${path}: cannot read the key file (${(error as NodeJS.ErrnoException).code ?? String(error)})`, { file: path });
  }
  let file: KeyFile;
  try {
    file = JSON.parse(text) as KeyFile;
  } catch {
    throw new InvalidInputError(`${path}: not a key file (not JSON)`, { file: path });
  }
  assertKeyFile(file, path);
  return file;
}

/**
 * Refuses what is not a key file of version 1 (a file read, or a value a caller passes).
 *
 * @throws {InvalidInputError} naming `where` (the file, or the argument).
 */
function assertKeyFile(file: KeyFile, where: string): void {
  const keys = file?.keys;
  const valid = file?.format === "sessionfold-key-file" &&
    file.version === 1 &&
    typeof keys === "object" &&
    keys !== null &&
    typeof file.current === "string" &&
    Object.hasOwn(keys, file.current) &&
    Object.values(keys).every((key) => typeof key === "string" && Buffer.from(key, "base64").length === 32);
  if (!valid) throw new InvalidInputError(`${where}: not a sessionfold key file of version 1 (format, current kid and 32-byte keys expected)`, { file: where });
}

/**
 * The key provider of a key file: every key in it, the current one for new data keys.
 *
 * @example
 * ```ts
 * import { EncryptedStorage } from "sessionfold";
 * import { NodeFileStorage } from "sessionfold/node";
 * const provider = await keyProviderOf(await readKeyFile("/tmp/store.key"));
 * const storage = await EncryptedStorage.open(new NodeFileStorage({ root: "/tmp/store" }), provider);
 * ```
 * @throws {InvalidInputError} when `file` is not a key file of version 1 (as {@linkcode readKeyFile} reads one).
 */
export async function keyProviderOf(file: KeyFile): Promise<KeyProvider> {
  assertKeyFile(file, "keyProviderOf(file)");
  const keys: Record<string, CryptoKey> = {};
  for (const [kid, key] of Object.entries(file.keys)) keys[kid] = await importKeyEncryptionKey(Buffer.from(key, "base64"));
  return keyring(keys, file.current);
}
