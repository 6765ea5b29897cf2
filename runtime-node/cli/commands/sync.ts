/**
 * The commands that connect stores (docs/SYNC.md): `serve` runs the sync server over the
 * store, `sync` brings the store and a remote (a sync server's URL, a folder, a PostgreSQL
 * store) to the same state.
 *
 * @module
 */
import { readFile } from "node:fs/promises";
import { formatSessionRef, InvalidInputError, NotFoundError, parseSessionRef, type StoragePort } from "../../../core/mod.ts";
import { corsOrigin } from "../../../core/internal.ts";
import { isWithin } from "../../../core/reader.ts";
import {
  createSyncHandler,
  directRemote,
  httpRemote,
  STORE_OWNER,
  SYNC_PROTOCOL_VERSION,
  SyncRefusedError,
  type SyncRemote,
  type SyncRemovals,
  SyncServer,
  syncStores,
} from "../../../core/sync/mod.ts";
import { serveFetchHandler } from "../../fetch-server.ts";
import { bearerMatches, isLoopbackHost } from "../../serve-access.ts";
import { nodeWriterIdentity } from "../../mod.ts";
import { type Command, refArg, repeatedOption, stringOption } from "../command.ts";
import { EXIT, UsageError } from "../exit.ts";
import { counted } from "../format.ts";
import type { CliIo } from "../io.ts";
import { databaseStoreIdentity, exists, resolveStore, Store, type StoreLocation } from "../store.ts";
import { absoluteAsOpened, canonicalPath, folderAsOpened } from "../user-paths.ts";

/** `sessionfold serve`: the sync server over the store, until SIGINT or SIGTERM. */
export const serve: Command = {
  help: [
    "Serves the store to `sessionfold sync --remote URL` and to hosts using sessionfold/sync",
    "(docs/SYNC.md), until SIGINT or SIGTERM. Prints the URL it listens on as its first line",
    "on stdout. --port 0 (the default) picks a free port. With --token-file, every request",
    "must carry `Authorization: Bearer <the file's content>`; without one it listens only on",
    "a loopback address (127.0.0.1, ::1, localhost). --cors-origin lets a web app served from",
    "another origin (`http://localhost:5173`) sync from the page; give it once per origin.",
  ].join("\n"),
  spec: {
    positionals: [],
    options: {
      host: { type: "string", value: "H", description: "the address to listen on (default 127.0.0.1)" },
      port: { type: "string", value: "P", description: "the port (default 0: a free one)" },
      "token-file": { type: "string", value: "F", description: "a file holding the bearer token every request must carry" },
      "cors-origin": { type: "string", value: "ORIGIN", repeatable: true, description: "an origin whose pages may sync (repeatable; default none)" },
    },
  },
  async run({ io, store, args }) {
    const host = stringOption(args, "host") ?? "127.0.0.1";
    const portText = stringOption(args, "port") ?? "0";
    const port = Number(portText);
    if (!/^\d+$/.test(portText) || port > 65535) throw new UsageError(`serve: --port takes 0 to 65535, got ${JSON.stringify(portText)}`, { option: "--port" });
    const tokenFile = stringOption(args, "token-file");
    if (tokenFile === undefined && !isLoopbackHost(host)) {
      throw new UsageError(`serve: listening on ${host} needs --token-file F; without a token only a loopback address is served`, { option: "--token-file" });
    }
    const origins = repeatedOption(args, "cors-origin").map(corsOriginOption);
    const token = tokenFile === undefined ? undefined : await readToken(io, tokenFile);
    const opened = await store.forWriting();
    const handler = createSyncHandler({
      server: new SyncServer({ storage: opened.storage, identity: nodeWriterIdentity() }),
      authorize: (request) => (token === undefined || bearerMatches(request.headers.get("authorization"), token) ? STORE_OWNER : undefined),
      ...(origins.length > 0 ? { corsOrigins: origins } : {}),
    });
    // The listener's own 408 names the same origins, so a listed page reads it (docs/SYNC.md "Slow clients").
    const server = await serveFetchHandler(handler, { host, port, ...(origins.length > 0 ? { corsOrigins: origins } : {}) });
    io.stdout(`${server.url}\n`);
    await new Promise<void>((done) => {
      process.once("SIGINT", done);
      process.once("SIGTERM", done);
    });
    await server.close();
    return EXIT.ok;
  },
};

/**
 * A `--cors-origin` value as the origin browsers send.
 *
 * @throws {UsageError} when it is not an http(s) origin (a wildcard, a path): nothing is served.
 */
function corsOriginOption(given: string): string {
  try {
    return corsOrigin(given, "serve: --cors-origin");
  } catch (error) {
    if (error instanceof InvalidInputError) throw new UsageError(error.message, { option: "--cors-origin", found: given });
    throw error;
  }
}

/** `sessionfold sync`: push and pull between the store and a remote. */
export const sync: Command = {
  help: [
    "Pushes what the remote lacks and pulls what the store lacks, for REF or every session",
    "(docs/SYNC.md). The remote is a sync server (`sessionfold serve`, or a host's",
    "createSyncHandler) by its URL, a folder, or a postgres:// store. Two devices that wrote",
    "after the same point: the first keeps the session, the other's messages become a fork,",
    "listed. A session that does not sync (refused by the remote, held there by another",
    "writer, corrupt here, of an unknown schema) is a conflict and the others sync; a run",
    "with conflicts exits 1. A refused token is error[unauthorized]; nothing changed.",
    "Sessions deleted or archived, here or there, are counted on their own lines.",
    '--json: {"pushed","pulled","deletes":{"pushed","pulled"},"archives":{"pushed","pulled"},',
    '  "forks":[{"ref","forked_as","at_sequence"}],"conflicts":[{"ref","reason","message"}]}',
  ].join("\n"),
  spec: {
    positionals: [],
    optionalPositionals: ["REF"],
    options: {
      remote: { type: "string", value: "URL|DIR|postgres://…", description: "the other side" },
      "token-file": { type: "string", value: "F", description: "a file holding the bearer token of the remote server" },
    },
  },
  async run({ io, out, store, args }) {
    const ref = args.positionals.length > 0 ? formatSessionRef(refArg(args)) : undefined;
    const target = stringOption(args, "remote");
    if (target === undefined) throw new UsageError("sync: missing --remote URL|DIR|postgres://…", { option: "--remote" });
    const tokenFile = stringOption(args, "token-file");
    const token = tokenFile === undefined ? undefined : await readToken(io, tokenFile);
    const location = await remoteLocation(target, io);
    if (location && (await overlapsStore(store, location))) {
      throw new UsageError(
        `sync: --remote ${
          JSON.stringify(target)
        } is this store (${store.root}), a folder inside it, or a folder that holds it; sync needs another folder or database`,
        { option: "--remote" },
      );
    }
    const local = await store.forWriting();
    let remoteStore: Store | undefined;
    try {
      let remote: SyncRemote;
      if (!location) {
        remote = httpRemote({ url: target, ...(token !== undefined ? { headers: { authorization: `Bearer ${token}` } } : {}) });
      } else {
        remoteStore = new Store(location, io);
        const opened = await remoteStore.forWriting();
        remote = directRemote(new SyncServer({ storage: opened.storage, identity: nodeWriterIdentity() }), { id: location.root });
      }
      if (ref !== undefined) await assertOnEitherSide(local.storage, remote, ref);
      const report = await syncStores({ local: local.sessions, remote, identity: nodeWriterIdentity(), ...(ref !== undefined ? { refs: [ref] } : {}) });
      const { pushed, pulled, deletes, archives, forks, conflicts } = report;
      const status = out.result({ pushed, pulled, deletes, archives, forks, conflicts }, () =>
        [
          `pushed ${counted(pushed, "message")}, pulled ${counted(pulled, "message")}`,
          ...removalLine("deleted", deletes),
          ...removalLine("archived", archives),
          // The remote's tail continues the ref; this store's own tail is what moved (docs/SYNC.md "Divergence").
          ...forks.map((f) => `fork: ${f.ref}: this store's messages after sequence ${f.at_sequence} are now ${f.forked_as}`),
          ...conflicts.map((c) => `conflict: ${c.ref} (${c.reason}): ${c.message}`),
        ].join("\n"));
      // A session left unsynced is not a success a script may take for one (docs/CLI.md "Exit status").
      return conflicts.length > 0 ? EXIT.notSynced : status;
    } finally {
      await remoteStore?.close().catch(() => undefined);
    }
  },
};

/** `deleted: pushed 1 session, pulled 2 sessions`, or nothing when neither side removed one. */
function removalLine(what: string, removals: SyncRemovals): string[] {
  if (removals.pushed === 0 && removals.pulled === 0) return [];
  return [`${what}: pushed ${counted(removals.pushed, "session")}, pulled ${counted(removals.pulled, "session")}`];
}

/**
 * The store `--remote` names, or `undefined` for a sync server's http(s) URL. Whatever
 * begins with a scheme (RFC 3986: a letter, then letters, digits, `+`, `-`, `.`, then `:`)
 * is a URL: http(s):// or postgres(ql):// only, anything else (`ftp:x`, a typo'd `http:/x`)
 * is refused rather than taken for a folder of that name (docs/CLI.md "Commands", `sync`: such a folder
 * is given as `./ftp:x`). A folder is resolved from the working folder as the system opens it
 * (`folderAsOpened`: a `..` after a link goes up from its target).
 *
 * @throws {UsageError} for a URL of another scheme, or one without `//`.
 */
async function remoteLocation(target: string, io: CliIo): Promise<StoreLocation | undefined> {
  const url = /^([A-Za-z][A-Za-z0-9+.-]*):(\/\/)?/.exec(target);
  if (!url) return { kind: "files", root: await folderAsOpened(io.cwd ?? process.cwd(), target) };
  const scheme = url[1]!.toLowerCase();
  if (url[2] && (scheme === "http" || scheme === "https")) return undefined;
  if (url[2] && (scheme === "postgres" || scheme === "postgresql")) return resolveStore({ root: undefined, store: target }, io);
  throw new UsageError(
    `sync: --remote ${
      JSON.stringify(target)
    } is not a URL sync takes; it takes a sync server (http://, https://), a PostgreSQL store (postgres://, postgresql://) or a folder (a name with a colon as ./${target})`,
    { option: "--remote" },
  );
}

/**
 * A REF sync is asked for exists in the store (live or archived) or on the remote: one on
 * neither side is `not-found` (docs/CLI.md "Exit status"), before anything is written.
 *
 * @throws {NotFoundError} naming REF and the remote.
 */
async function assertOnEitherSide(storage: StoragePort, remote: SyncRemote, ref: string): Promise<void> {
  const parsed = parseSessionRef(ref);
  if ((await exists(storage, parsed, false)) || (await exists(storage, parsed, true))) return;
  try {
    await remote.read({ v: SYNC_PROTOCOL_VERSION, ref, after_sequence: 0, limit: 1 });
  } catch (error) {
    // The remote has it but cannot serve it (corrupt, unknown schema: 409): the run reports that session's conflict.
    if (error instanceof SyncRefusedError && error.status === 409) return;
    if (!(error instanceof SyncRefusedError && error.reason === "not-found")) throw error;
    throw new NotFoundError(`no session ${ref} in this store or on the remote ${remote.id}`, { ref });
  }
}

/**
 * Whether `location` is the store itself or shares its files: the same folder, or one inside
 * the other, once links are resolved; or the same database and schema, as the servers say
 * (two spellings of one URL are one store).
 */
async function overlapsStore(store: Store, location: StoreLocation): Promise<boolean> {
  if (location.kind === "postgres") {
    const ours = store.location;
    if (ours.kind !== "postgres") return false;
    const [a, b] = await Promise.all([databaseStoreIdentity(ours), databaseStoreIdentity(location)]);
    return a === b;
  }
  if (store.folder === undefined) return false;
  const [ours, theirs] = [await canonicalPath(store.folder), await canonicalPath(location.root)];
  return isWithin(ours, theirs) || isWithin(theirs, ours);
}

async function readToken(io: CliIo, file: string): Promise<string> {
  const path = absoluteAsOpened(io.cwd ?? process.cwd(), file);
  const token = (await readFile(path, "utf8").catch((error: NodeJS.ErrnoException) => {
    throw new UsageError(`--token-file ${path}: ${error.code === "ENOENT" ? "no such file" : error.message}`, { option: "--token-file" });
  })).trim();
  if (token === "" || /\s/.test(token)) throw new UsageError(`--token-file ${path}: expected one token (no spaces) on one line`, { option: "--token-file" });
  return token;
}
