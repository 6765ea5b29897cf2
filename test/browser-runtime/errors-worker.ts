/** A module Web Worker for the error-hop test: throws typed errors through Comlink. */
import * as Comlink from "comlink";
import { StorageFullError, WriterLockedError } from "../../core/mod.ts";
import { registerErrorTransfer } from "../../core/internal.ts";

registerErrorTransfer(Comlink);

const api = {
  async storageFull(path: string): Promise<void> {
    throw new StorageFullError(`append of "${path}" failed: quota exhausted; nothing was written`, { path, operation: "append" });
  },
  async writerLocked(): Promise<void> {
    throw new WriterLockedError("session is locked by tab-beef", {
      path: "agents/a/workspaces/w/sessions/s/writer.lock",
      owner: { pid: 0, hostname: "tab-beef", runtime: "browser", operation: "run", created_at: "2026-12-02T13:00:00.000Z" },
    });
  },
  async plain(): Promise<void> {
    throw new TypeError("not a sessionfold error");
  },
};

export type ErrorsWorkerApi = typeof api;
Comlink.expose(api);
