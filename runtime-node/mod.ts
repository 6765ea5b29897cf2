/**
 * The Node runtime of sessionfold: durable files under `~/.sessionfold` (or
 * `$SESSIONFOLD_HOME`), written by a {@linkcode NodeFileStorage} in one worker thread that
 * the host reaches through {@linkcode WorkerFileStorage}. It adds storage only: every session
 * rule lives in the core. Most hosts need just {@linkcode openNodeSessions}.
 *
 * @example
 * ```ts
 * import { openNodeSessions } from "sessionfold/node";
 *
 * const { sessions, close } = await openNodeSessions();
 * const session = await sessions.create({ agentId: "coder", workspaceId: "repo", title: "Fix the build" });
 * await session.append({ role: "user", parts: [{ type: "text", text: "The build fails." }] });
 * await close();
 * ```
 * @module
 */
export { defaultRoot, type NodeSessions, nodeWriterIdentity, openNodeSessions, type OpenNodeSessionsOptions } from "./open.ts";
export { nodeAesGcm } from "./aes-gcm.ts";
export { NodeFileStorage, type NodeFileStorageOptions } from "./fs-storage.ts";
export { storageErrorFromFs } from "./fs-errors.ts";
export { WorkerFileStorage, type WorkerFileStorageOptions } from "./storage-worker-client.ts";
export { type FetchListenerOptions, fetchRequestListener, type FetchServer, serveFetchHandler, type ServeFetchOptions } from "./fetch-server.ts";
export { type KeyFile, keyProviderOf, readKeyFile, replaceKeyFile, withNewKey, writeNewKeyFile } from "./key-file.ts";
