import { isValidId, type FileTail, type StorageCapabilities, type StoragePort, type WriteOptions } from "../core/mod.ts";

/** What a tab announces after committing: the session and its new revision. */
export interface CommitEvent {
  /** `<agent_id>/<workspace_id>/<session_id>`. */
  readonly ref: string;
  /** The revision now in `meta.json`. */
  readonly revision: number;
}

/** Options of {@linkcode PageStorage}. */
export interface PageStorageOptions {
  /** Called after each successful `replace` of a live session's `meta.json`. */
  readonly onCommit?: (event: CommitEvent) => void;
  /** Called once, before the first write goes out (to ask for persistent storage). */
  readonly onFirstWrite?: () => void;
}

const META_PATH = /^agents\/([^/]+)\/workspaces\/([^/]+)\/sessions\/([^/]+)\/meta\.json$/;

/**
 * The commit a `replace(path, bytes)` announces, or `undefined` when `path` is not a live
 * session's `meta.json` (a fork's hidden staging folder is not a valid id, so it is never
 * announced) or the bytes carry no revision.
 *
 * @example
 * ```ts
 * commitOf("agents/a/workspaces/w/sessions/s/meta.json", new TextEncoder().encode('{"revision":3}'));
 * // { ref: "a/w/s", revision: 3 }
 * ```
 */
export function commitOf(path: string, bytes: Uint8Array): CommitEvent | undefined {
  const match = META_PATH.exec(path);
  if (!match || !match.slice(1).every(isValidId)) return undefined;
  try {
    const revision: unknown = JSON.parse(new TextDecoder().decode(bytes))?.revision;
    return typeof revision === "number" && Number.isSafeInteger(revision) ? { ref: match.slice(1).join("/"), revision } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A thin page-side wrapper over the storage a tab uses: it forwards every call unchanged,
 * runs `onFirstWrite` once before the first mutating call, and reports each committed
 * `meta.json` to `onCommit` (which the browser runtime posts on its BroadcastChannel). It
 * adds no rule of its own; `acquireLock` / `releaseLock` exist exactly when the inner
 * storage has them.
 */
export class PageStorage implements StoragePort {
  readonly inner: StoragePort;
  declare readonly acquireLock?: (name: string) => Promise<boolean>;
  declare readonly releaseLock?: (name: string) => Promise<void>;
  readonly #options: PageStorageOptions;
  #wrote = false;

  constructor(inner: StoragePort, options: PageStorageOptions = {}) {
    this.inner = inner;
    this.#options = options;
    if (inner.acquireLock && inner.releaseLock) {
      const acquire = inner.acquireLock.bind(inner);
      const release = inner.releaseLock.bind(inner);
      Object.defineProperty(this, "acquireLock", { value: (name: string) => (this.#write(), acquire(name)) });
      Object.defineProperty(this, "releaseLock", { value: (name: string) => release(name) });
    }
  }

  get capabilities(): StorageCapabilities {
    return this.inner.capabilities;
  }

  read(path: string): Promise<Uint8Array | undefined> {
    return this.inner.read(path);
  }

  readTail(path: string, maxBytes: number): Promise<FileTail | undefined> {
    return this.inner.readTail(path, maxBytes);
  }

  list(dir: string): Promise<string[]> {
    return this.inner.list(dir);
  }

  async replace(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<void> {
    this.#write();
    // Parsed before the call: the bytes are the caller's, and the call may transfer a copy.
    const commit = this.#options.onCommit ? commitOf(path, bytes) : undefined;
    await this.inner.replace(path, bytes, options);
    if (commit) {
      try {
        this.#options.onCommit!(commit);
      } catch {
        // Announcing is best effort: a committed write never looks failed because of it.
      }
    }
  }

  append(path: string, bytes: Uint8Array): Promise<void> {
    this.#write();
    return this.inner.append(path, bytes);
  }

  createExclusive(path: string, bytes: Uint8Array, options?: WriteOptions): Promise<boolean> {
    this.#write();
    return this.inner.createExclusive(path, bytes, options);
  }

  truncate(path: string, length: number): Promise<void> {
    this.#write();
    return this.inner.truncate(path, length);
  }

  remove(path: string, options?: WriteOptions): Promise<void> {
    this.#write();
    return this.inner.remove(path, options);
  }

  move(from: string, to: string): Promise<boolean> {
    this.#write();
    return this.inner.move(from, to);
  }

  async close(): Promise<void> {
    await this.inner.close?.();
  }

  #write(): void {
    if (this.#wrote) return;
    this.#wrote = true;
    this.#options.onFirstWrite?.();
  }
}
