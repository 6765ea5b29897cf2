/**
 * The commands that move history between sessionfold and other systems: `import` reads a
 * DeepCode, Rho, pi, Codex or Claude Code file into a new session (detecting the format
 * when `--from` is not given; a sealed export opened with its passphrase first), `export` writes a session's full history as a DeepCode v1
 * stream, a Rho snapshot or a pi session, optionally redacted (core/export) and sealed with a
 * passphrase.
 *
 * @module
 */
import { readdir } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import {
  detectDeepCodeLayout,
  type Diagnostic,
  type ExportOptions,
  formatBytes,
  type FormatDetection,
  formatSessionRef,
  InvalidInputError,
  LimitExceededError,
  MAX_FILE_BYTES,
  type PortableSession,
  prepareExport,
  readDeepCode,
  readRhoJsonl,
  readRhoSnapshot,
  type RhoTreeSummary,
  sealExport,
  writeDeepCodeV1,
  writePi,
  writeRhoSnapshot,
} from "../../../core/mod.ts";
import { detectFileFormat, readStreamed, STREAMED_FORMATS, type StreamedFormat } from "../agent-formats.ts";
import { type Command, refArg, stringOption } from "../command.ts";
import { UsageError } from "../exit.ts";
import { counted } from "../format.ts";
import { Progress } from "../io.ts";
import { looksSealed, type OpenedImport, openSealedInput, readOpenedImport, readPassphraseFile } from "../sealed-input.ts";
import { openForReading } from "../store.ts";
import { absoluteAsOpened, checkOutTarget } from "../user-paths.ts";
import { writeExportFile } from "../write-out.ts";
import { openInputFile } from "../../fs-boundary.ts";

const IMPORT_FORMATS = ["deepcode", "rho-snapshot", "rho-jsonl", ...STREAMED_FORMATS] as const;
const EXPORT_FORMATS = ["deepcode", "rho-snapshot", "pi"] as const;

/** `sessionfold import`: import another system's session. Its `help` says what it prints. */
export const importCommand: Command = {
  help: [
    "Reads FILE (never changing it) and creates the session REF from it. deepcode reads",
    "<id>.v1.jsonl, or a legacy <id>.jsonl (core-v0 with <id>.meta.json beside it, or",
    "desktop-v0); a v1 stream beside a legacy one is preferred. rho-snapshot reads a",
    "SessionSnapshot (schema 2, or 1 migrated); rho-jsonl an app session stream; pi a",
    "pi-coding-agent session (its active branch); codex a Codex CLI rollout; claude-code a",
    "Claude Code transcript (its main chain). Without --from the format is detected from",
    "the first line and named on stderr. An interrupted final line is ignored and reported;",
    "any other invalid line refuses the import with FILE:LINE, and nothing is created.",
    "A sealed export (an export sealed with a passphrase, as the playground writes) is",
    "opened with the first line of --passphrase-file FILE, then read as the file it holds;",
    "without one it is refused (key-required, exit 4), a wrong one is wrong-key (exit 4).",
    '--json: the new meta (with "detected": {format, reason} when --from was not given).',
  ].join("\n"),
  spec: {
    positionals: ["FILE"],
    options: {
      from: { type: "string", value: IMPORT_FORMATS.join("|"), description: "the file's format (default: detected)" },
      into: { type: "string", value: "REF", description: "the session to create" },
      branch: { type: "string", value: "ID", description: "rho-jsonl: the node whose branch to import (default: the active leaf)" },
      "passphrase-file": { type: "string", value: "FILE", description: "a sealed export's passphrase, the file's first line" },
    },
  },
  async run({ store, out, io, args }) {
    const given = stringOption(args, "from");
    const into = stringOption(args, "into");
    if (given !== undefined && !(IMPORT_FORMATS as readonly string[]).includes(given)) {
      throw new UsageError(`import: --from must be one of ${IMPORT_FORMATS.join(", ")}, got ${JSON.stringify(given)}`, { option: "--from" });
    }
    if (into === undefined) throw new UsageError("import: missing --into REF", { option: "--into" });
    const ref = refArg({ ...args, positionals: [into] });
    const file = absoluteAsOpened(io.cwd ?? process.cwd(), args.positionals[0]!);
    const passphraseFile = stringOption(args, "passphrase-file");
    const branch = stringOption(args, "branch");
    let detected: FormatDetection | undefined = given === undefined && passphraseFile === undefined ? await detectFileFormat(file) : undefined;
    // A file no format claims may be a sealed export: it is opened, then what it holds is read.
    const unsealed = passphraseFile !== undefined || (given === undefined && detected === undefined && (await looksSealed(file)))
      ? await openSealedInput(file, await readInput(file), passphraseFile !== undefined ? absoluteAsOpened(io.cwd ?? process.cwd(), passphraseFile) : undefined)
      : undefined;
    let read: OpenedImport;
    if (unsealed) {
      read = await readOpenedImport(file, unsealed, given, branch);
      detected = read.detected;
      if (detected) out.note(`note: opened the sealed export; detected ${detected.format} (${detected.reason})`);
    } else {
      if (given === undefined && detected === undefined) {
        throw new UsageError(`import: cannot tell the format of ${basename(file)} from its first line; pass --from ${IMPORT_FORMATS.join("|")}`, {
          option: "--from",
        });
      }
      if (detected) out.note(`note: detected ${detected.format} (${detected.reason})`);
      const format = (given ?? detected!.format) as (typeof IMPORT_FORMATS)[number];
      if (branch !== undefined && format !== "rho-jsonl") {
        throw new UsageError(`import: --branch applies to rho-jsonl only, not ${format}`, { option: "--branch" });
      }
      read = (STREAMED_FORMATS as readonly string[]).includes(format)
        ? await readStreamed(format as StreamedFormat, file)
        : await readForeign(format as Exclude<typeof format, StreamedFormat>, file, branch);
    }
    const { session, diagnostics, tree } = read;
    if (tree && tree.offBranchNodes > 0) {
      out.note(
        `note: imported the branch of node ${tree.importedLeafId}; left out ${counted(tree.offBranchNodes, "node")} on ${
          counted(tree.otherLeafIds.length, "other branch", "other branches")
        } (--branch ID: ${tree.otherLeafIds.join(", ")})`,
      );
    }
    for (const diagnostic of diagnostics) out.note(`note: ${diagnostic.message}`);
    const opened = await store.forWriting();
    const imported = await opened.sessions.importPortable(ref, session);
    const meta = imported.meta;
    return out.result(
      { ...meta, ...(detected ? { detected } : {}), ...(tree ? { tree } : {}) },
      () => `imported ${counted(session.messages.length, "message")} from ${basename(file)} into ${formatSessionRef(ref)} (revision ${meta.revision})`,
    );
  },
};

/** `sessionfold export`: export the full history. Its `help` says what it prints. */
export const exportCommand: Command = {
  help: [
    "Writes the session's full history (every segment, then Active) as a DeepCode v1 stream,",
    "a Rho SessionSnapshot (schema 2; raw reasoning is never written) or a pi session (each",
    "compaction a compaction entry, so pi's context is the session's). Without --out the",
    "document goes to stdout. Read-only: nothing under --root changes.",
    "--redact replaces secrets (API keys, tokens, private keys, passwords…) in every text;",
    "the --drop-* flags leave whole kinds of data out. A DeepCode stream or a pi session needs a cwd: the",
    "imported one, else --cwd, else the current folder. --passphrase-file FILE seals the export",
    "(AES-256-GCM under a key derived from the file's first line; import opens it with the same).",
    '--json with --out: {"out","records"}',
  ].join("\n"),
  spec: {
    positionals: ["REF"],
    options: {
      to: { type: "string", value: EXPORT_FORMATS.join("|"), description: "the format to write" },
      out: { type: "string", value: "FILE", description: "write here instead of stdout" },
      redact: { type: "boolean", description: "replace secrets inside every text" },
      cwd: { type: "string", value: "DIR", description: "the cwd a DeepCode stream or pi session records" },
      "drop-system-prompt": { type: "boolean", description: "leave the system prompt out" },
      "drop-tool-outputs": { type: "boolean", description: "leave tool outputs and errors out" },
      "drop-file-data": { type: "boolean", description: "leave inline file data out" },
      "drop-provider-context": { type: "boolean", description: "leave provider context out" },
      "drop-metadata": { type: "boolean", description: "leave metadata and the prompt-cache key out" },
      "drop-reasoning": { type: "boolean", description: "leave reasoning and reasoning summaries out" },
      "passphrase-file": { type: "string", value: "FILE", description: "seal the export with the passphrase on the file's first line" },
    },
  },
  async run({ store, out, io, args }) {
    const format = stringOption(args, "to");
    if (format === undefined) throw new UsageError(`export: missing --to ${EXPORT_FORMATS.join("|")}`, { option: "--to" });
    if (!(EXPORT_FORMATS as readonly string[]).includes(format)) {
      throw new UsageError(`export: --to must be one of ${EXPORT_FORMATS.join(", ")}, got ${JSON.stringify(format)}`, { option: "--to" });
    }
    const ref = refArg(args);
    const target = stringOption(args, "out");
    const path = target === undefined ? undefined : absoluteAsOpened(io.cwd ?? process.cwd(), target);
    // Before the session is read: a target in the store, or one that cannot be written, is refused first.
    if (path !== undefined) await checkOutTarget(path, store.folder);
    const opened = await store.holding(ref);
    const session = await openForReading(opened.sessions, ref);
    const progress = new Progress(io, "export");
    let portable: PortableSession;
    try {
      portable = await session.exportPortable({ onProgress: (done, total) => progress.update(done, total) });
    } finally {
      progress.end();
    }
    const flag = (name: string) => args.options[name] === true;
    const options: ExportOptions = {
      redact: flag("redact"),
      dropSystemPrompt: flag("drop-system-prompt"),
      dropToolOutputs: flag("drop-tool-outputs"),
      dropFileData: flag("drop-file-data"),
      dropProviderContext: flag("drop-provider-context"),
      dropMetadata: flag("drop-metadata"),
      dropReasoning: flag("drop-reasoning"),
    };
    const prepared = prepareExport(portable, options).session;
    const omitted: string[] = [];
    const onOmitted = (omission: { type?: string }) => omitted.push(omission.type ?? "part");
    const given = prepared.cwd ?? stringOption(args, "cwd");
    const cwd = given ?? io.cwd ?? process.cwd();
    // Never a silent guess: a cwd the CLI took from the process is said (note and --json `filled`).
    const filled = given === undefined && format !== "rho-snapshot" ? { cwd: "the current folder" } : undefined;
    if (filled) out.note(`note: the session has no cwd of its own; wrote the current folder ${cwd} (pass --cwd to choose)`);
    const bytes = format === "deepcode"
      ? writeDeepCodeV1(prepared, { cwd, onOmitted })
      : format === "pi"
      ? writePi(prepared, { cwd, onOmitted })
      : writeRhoSnapshot(prepared, { onOmitted });
    if (omitted.length > 0) out.note(`note: left out ${counted(omitted.length, "part")} with no place in ${format} (${[...new Set(omitted)].join(", ")})`);
    const records = format === "rho-snapshot" ? historyLength(bytes) : countLines(bytes);
    const passphraseFile = stringOption(args, "passphrase-file");
    const written = passphraseFile !== undefined
      ? await sealExport(bytes, await readPassphraseFile(absoluteAsOpened(io.cwd ?? process.cwd(), passphraseFile)))
      : bytes;
    if (path === undefined) {
      io.stdout(new TextDecoder().decode(written));
      return 0;
    }
    // A sealed file is no DeepCode stream: DeepCode's writer lock is not taken for it.
    await writeExportFile(path, written, passphraseFile !== undefined ? "sealed" : format);
    return out.result(
      { out: path, records, ...(filled ? { filled } : {}) },
      () => `exported ${counted(records, "record")} of ${formatSessionRef(ref)} to ${path}`,
    );
  },
};

/** Reads another system's file; DeepCode files bring their siblings (`<id>.meta.json`, `<id>.v1.jsonl`). */
async function readForeign(
  format: "deepcode" | "rho-snapshot" | "rho-jsonl",
  file: string,
  branch?: string,
): Promise<{ session: PortableSession; diagnostics: readonly Diagnostic[]; tree?: RhoTreeSummary }> {
  const bytes = await readInput(file);
  if (format === "rho-snapshot") return { session: readRhoSnapshot(bytes, basename(file)), diagnostics: [] };
  if (format === "rho-jsonl") return readRhoJsonl(bytes, basename(file), branch !== undefined ? { branch } : {});
  const id = /^(.*?)(\.v1)?\.jsonl$/.exec(basename(file))?.[1];
  if (id === undefined) throw new InvalidInputError(`${basename(file)}: a DeepCode session file is named <id>.v1.jsonl or <id>.jsonl`, { file });
  const siblings = (await readdir(dirname(file)).catch(() => [] as string[])).filter((name) =>
    name === `${id}.meta.json` || name === `${id}.v1.jsonl` || name === `${id}.jsonl`
  );
  const files = await Promise.all(
    siblings.map(async (name) => ({ name, bytes: name === basename(file) ? bytes : await readInput(join(dirname(file), name)) })),
  );
  return readDeepCode(detectDeepCodeLayout(files.length > 0 ? files : [{ name: basename(file), bytes }], id));
}

/**
 * Reads a whole source file (DeepCode, Rho): a FIFO or a device is refused before a byte is
 * read, and a file over `MAX_FILE_BYTES` by its size, so memory stays bounded.
 */
async function readInput(file: string): Promise<Uint8Array> {
  const { handle, size } = await openInputFile(file);
  try {
    if (size > MAX_FILE_BYTES) {
      throw new LimitExceededError(
        `${file}: a file of ${formatBytes(size)} is over the limit of ${
          formatBytes(MAX_FILE_BYTES)
        } (MAX_FILE_BYTES) for a file read whole; nothing was imported`,
        { limit: "MAX_FILE_BYTES", max: MAX_FILE_BYTES, found: size, file },
      );
    }
    return new Uint8Array(await handle.readFile());
  } catch (error) {
    if (error instanceof LimitExceededError) throw error;
    throw new InvalidInputError(`${file}: cannot be read (${(error as { code?: string }).code ?? (error as Error).message})`, { file });
  } finally {
    await handle.close();
  }
}

function countLines(bytes: Uint8Array): number {
  let lines = 0;
  for (const byte of bytes) if (byte === 0x0a) lines += 1;
  return lines;
}

function historyLength(bytes: Uint8Array): number {
  const history = (JSON.parse(new TextDecoder().decode(bytes)) as { history?: unknown[] }).history;
  return Array.isArray(history) ? history.length : 0;
}
