/**
 * `npm start` until the demo exists: writes a session (meta.json + messages in
 * active.jsonl) to a folder through the core's storage port, then reads it back.
 *
 *   npm start                 # writes under a new temp folder
 *   npm start -- ./my-store   # writes under ./my-store (run it twice: the session grows)
 */
import { appendFile, mkdir, mkdtemp, open, readdir, readFile, rename, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import {
  assertStoragePath,
  decodeJsonl,
  encodeJsonDocument,
  encodeJsonl,
  MessageRecord,
  nowTimestamp,
  parseMetaJson,
  parseSessionRef,
  sessionPaths,
  type FileTail,
  type SessionMeta,
  type StorageCapabilities,
  type StoragePort,
} from "../core/mod.ts";

/**
 * A minimal filesystem StoragePort, just enough for this example. It is NOT the
 * durable Node runtime (that one fsyncs files and folders and runs in a worker);
 * here `replace` is write-temp + rename and `append` is a plain appendFile.
 */
class ExampleFileStorage implements StoragePort {
  readonly capabilities: StorageCapabilities = { durable: false, backend: "example-fs" };
  constructor(readonly root: string) {}

  async read(path: string): Promise<Uint8Array | undefined> {
    return ifExists(() => readFile(this.#file(path)));
  }

  async readTail(path: string, maxBytes: number): Promise<FileTail | undefined> {
    const handle = await ifExists(() => open(this.#file(path), "r"));
    if (!handle) return undefined;
    try {
      const { size } = await handle.stat();
      const length = Math.min(size, Math.max(0, maxBytes));
      const bytes = new Uint8Array(length);
      await handle.read(bytes, 0, length, size - length);
      return { bytes, size };
    } finally {
      await handle.close();
    }
  }

  async list(dir: string): Promise<string[]> {
    const names = await ifExists(() => readdir(dir === "" ? this.root : this.#file(dir)));
    return (names ?? []).sort();
  }

  async replace(path: string, bytes: Uint8Array): Promise<void> {
    const file = await this.#withParent(path);
    await writeFile(`${file}.tmp`, bytes);
    await rename(`${file}.tmp`, file);
  }

  async append(path: string, bytes: Uint8Array): Promise<void> {
    await appendFile(await this.#withParent(path), bytes);
  }

  async createExclusive(path: string, bytes: Uint8Array): Promise<boolean> {
    try {
      await writeFile(await this.#withParent(path), bytes, { flag: "wx" });
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
      throw error;
    }
  }

  async truncate(path: string, length: number): Promise<void> {
    const file = this.#file(path);
    const info = await ifExists(() => stat(file));
    if (info && length < info.size) await truncate(file, Math.max(0, length));
  }

  async remove(path: string): Promise<void> {
    await rm(this.#file(path), { recursive: true, force: true });
  }

  async move(from: string, to: string): Promise<boolean> {
    const source = this.#file(from);
    if (await ifExists(() => stat(this.#file(to)))) return false;
    await rename(source, await this.#withParent(to));
    return true;
  }

  #file(path: string): string {
    assertStoragePath(path);
    return join(this.root, ...path.split("/"));
  }

  async #withParent(path: string): Promise<string> {
    const file = this.#file(path);
    await mkdir(dirname(file), { recursive: true });
    return file;
  }
}

/** Runs `read`, turning "no such file" into `undefined`. */
async function ifExists<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

const root = process.argv[2] ? resolve(process.argv[2]) : await mkdtemp(join(tmpdir(), "sessionfold-example-"));
const storage = new ExampleFileStorage(root);
const ref = parseSessionRef("example-agent/default/s1");
const paths = sessionPaths(ref);

// Start the session, or continue it when this root already holds it.
const existing = await storage.read(paths.meta);
const now = nowTimestamp();
let meta: SessionMeta = existing
  ? parseMetaJson(existing)
  : {
      schema_version: 1,
      session_id: ref.sessionId,
      agent_id: ref.agentId,
      workspace_id: ref.workspaceId,
      title: "sessionfold example",
      created_at: now,
      updated_at: now,
      message_count: 0,
      history_bytes: 0,
      revision: 0,
    };

const turns: [MessageRecord["role"], string][] = [
  ["user", "What does sessionfold keep?"],
  ["assistant", "Every committed message, in append-only JSONL."],
  ["user", "And when the session grows?"],
];
for (const [role, text] of turns) {
  const sequence = meta.message_count + 1;
  const message = MessageRecord.parse({
    record_type: "message",
    sequence,
    message_id: `m${sequence}`,
    role,
    created_at: nowTimestamp(),
    ...(role === "assistant" ? { status: "completed" } : {}),
    parts: [{ sequence: 1, type: "text", text }],
  });
  // One commit: append the line, then record it in meta.json.
  const line = encodeJsonl([message]);
  await storage.append(paths.active, line);
  meta = {
    ...meta,
    message_count: sequence,
    history_bytes: meta.history_bytes + line.length,
    updated_at: message.created_at,
    revision: meta.revision + 1,
  };
  await storage.replace(paths.meta, encodeJsonDocument(meta));
}

// Read it back the way the core opens a session.
const readBack = parseMetaJson((await storage.read(paths.meta))!);
const decoded = decodeJsonl<MessageRecord>((await storage.read(paths.active))!, {
  file: "messages/active.jsonl",
  schemas: { message: MessageRecord },
});

console.log(`wrote session ${ref.agentId}/${ref.workspaceId}/${ref.sessionId} under ${root}`);
console.log(`  ${join(root, ...paths.meta.split("/"))} (revision ${readBack.revision}, ${readBack.message_count} messages)`);
console.log(`  ${join(root, ...paths.active.split("/"))}`);
for (const { record } of decoded.records) {
  const text = record.parts.map((part) => ("text" in part ? part.text : `[${part.type}]`)).join(" ");
  console.log(`  #${record.sequence} ${record.role}: ${text}`);
}
for (const diagnostic of decoded.diagnostics) console.log(`  ! ${diagnostic.message}`);
