/**
 * `keygen` and `rekey`: the key file of an encrypted store (docs/FORMAT.md "Encrypted stores").
 *
 * @module
 */
import { EncryptedStorage, InvalidInputError, KeyRequiredError } from "../../../core/mod.ts";
import { keyProviderOf, readKeyFile, replaceKeyFile, withNewKey, writeNewKeyFile } from "../../mod.ts";
import { type Command, stringOption } from "../command.ts";
import { UsageError } from "../exit.ts";
import { counted } from "../format.ts";
import { absoluteAsOpened, checkOutTarget, outWriteError } from "../user-paths.ts";

/** `sessionfold keygen --out FILE`: a new key file, mode 0600, never over an existing file. */
export const keygen: Command = {
  help: [
    "Writes a new 256-bit key-encryption key with a new kid to FILE, mode 0600; an existing",
    "file is never overwritten. Give it as --key-file FILE (or SESSIONFOLD_KEY_FILE) to a",
    "command on a new store to make that store encrypted, and on every later command to open it.",
    "Keep it safe: without it the store cannot be read.",
    '--json: {"file","kid"}',
  ].join("\n"),
  spec: { positionals: [], options: { out: { type: "string", value: "FILE", description: "where to write the key file" } } },
  async run({ store, out, io, args }) {
    const given = stringOption(args, "out");
    if (given === undefined) throw new UsageError("keygen: missing --out FILE", { option: "--out" });
    const file = absoluteAsOpened(io.cwd ?? process.cwd(), given);
    // A key kept inside the store it opens would travel with every copy of the store.
    await checkOutTarget(file, store.folder);
    const written = await writeNewKeyFile(file).catch((error: unknown) => {
      throw outWriteError(file, error);
    });
    return out.result({ file, kid: written.current }, () => `wrote key ${written.current} to ${file} (mode 0600)`);
  },
};

/**
 * `sessionfold rekey`: adds a new key to the key file and re-wraps every session's data keys
 * with it; history is not rewritten. Run again after an interruption, it finishes the job.
 */
export const rekey: Command = {
  help: [
    "Adds a new key to the --key-file (atomically) and re-wraps every session's data keys",
    "(live and archived) with it; every later write uses a new data key. Sealed history is",
    "not rewritten. Interrupted, run it again: it resumes. The old kid is then no longer",
    "needed; remove it from the key file to retire it. Run it while nothing else writes the store.",
    '--json: {"kid","previous_kid","sessions","data_keys"}',
  ].join("\n"),
  spec: { positionals: [], options: {} },
  async run({ store, out }) {
    const path = store.keyFile;
    if (path === undefined) throw new KeyRequiredError("rekey: give the store's key file (--key-file FILE or SESSIONFOLD_KEY_FILE)");
    const opened = await store.forWriting();
    if (!(opened.storage instanceof EncryptedStorage)) throw new InvalidInputError(`rekey: the store ${store.root} is not encrypted`, { root: store.root });
    const previous = opened.storage.currentKid;
    let file = await readKeyFile(path);
    // A rekey that stopped after writing the key file resumes with the key it added.
    if (file.current === previous) {
      file = withNewKey(file);
      await replaceKeyFile(path, file);
    }
    const rotating = await EncryptedStorage.open(opened.storage.inner, await keyProviderOf(file));
    const report = await rotating.rotate();
    return out.result(
      { kid: report.kid, previous_kid: previous, sessions: report.sessions, data_keys: report.dataKeys },
      () =>
        `rotated ${store.root} from ${previous} to ${report.kid}: ${counted(report.dataKeys, "data key")} of ${
          counted(report.sessions, "session")
        } re-wrapped; remove ${previous} from ${path} to retire it`,
    );
  },
};

/** `sessionfold encrypt`: encrypts a store in the clear in place with the --key-file (crash-safe; run again to resume). */
export const encrypt: Command = {
  help: [
    "Seals every file of every session (live and archived) with the --key-file's current key,",
    "each file replaced whole; until it finishes, the store opens for nobody. Interrupted,",
    "run it again: it resumes. Copies made before (backups) stay in the clear. Run it while",
    "nothing else writes the store.",
    '--json: {"sessions","files"}',
  ].join("\n"),
  spec: { positionals: [], options: {} },
  async run({ store, out }) {
    const path = store.keyFile;
    if (path === undefined) throw new KeyRequiredError("encrypt: give the key file to encrypt with (--key-file FILE or SESSIONFOLD_KEY_FILE)");
    const report = await store.encryptInPlace(await keyProviderOf(await readKeyFile(path)));
    return out.result(report, () => `encrypted ${store.root}: ${counted(report.files, "file")} of ${counted(report.sessions, "session")} sealed`);
  },
};
