/**
 * The caller's half of Comlink's message protocol, for an API of plain-data calls: a call is
 * one `APPLY` message to an endpoint that `Comlink.expose` serves, and its answer comes back
 * under the same id, its value raw or rebuilt by the transfer handler it names. The host's
 * {@linkcode WorkerStorageClient} speaks it itself instead of going through `Comlink.wrap`,
 * whose proxies cost a storage call more than the call: a new proxy on every property read,
 * each registered for finalization (work for the garbage collector), and a four-part random
 * id per call (docs/decisions.md, "The storage worker's hop at the constant factor").
 *
 * @module
 */
import { InternalError } from "../errors.ts";
import type { ComlinkLike } from "./transfer.ts";

/** What a call is posted to and answered from: a Web Worker, a `MessagePort`, or a Node worker wrapped by Comlink's node adapter. */
export interface MessageEndpoint {
  postMessage(message: unknown, transfer: never[]): void;
  addEventListener(type: "message", listener: (event: { readonly data: unknown }) => void): void;
  /** A `MessagePort` delivers nothing until it is started. */
  start?: () => void;
}

/**
 * A call as `Comlink.expose` reads it (Comlink's `ApplyMessage`, every argument a raw wire value). Without an `id` it is
 * sent with no answer owed: `serveComlinkCalls` posts none, and what `Comlink.expose` posts no caller matches.
 */
export interface ComlinkCall {
  readonly id?: string;
  readonly type: "APPLY";
  readonly path: readonly [string];
  readonly argumentList: readonly { readonly type: "RAW"; readonly value: unknown }[];
}

/** An answer as `Comlink.expose` posts it (Comlink's `WireValue` with the call's id). */
export interface ComlinkAnswer {
  readonly id: string;
  readonly type: "RAW" | "HANDLER";
  /** With `HANDLER`: the transfer handler that serialized the value (a thrown error's, for instance). */
  readonly name?: string;
  readonly value: unknown;
}

/**
 * The message that calls `method` with `args` on the object a `Comlink.expose` serves; with `id` `undefined`, a call
 * that owes no answer (a compaction's stage: its failure reaches the plan that names it).
 *
 * @example
 * ```ts
 * declare const worker: { postMessage(message: unknown): void };
 *
 * worker.postMessage(comlinkCall("1", "read", ["meta.json"]));
 * ```
 */
export function comlinkCall(id: string | undefined, method: string, args: readonly unknown[]): ComlinkCall {
  // Built by push, not `map`: a mapped array is holey, which the structured clone writes (and
  // the worker reads) as a sparse array, key by key.
  const argumentList: { readonly type: "RAW"; readonly value: unknown }[] = [];
  for (const value of args) argumentList.push({ type: "RAW", value });
  return id === undefined ? { type: "APPLY", path: [method], argumentList } : { id, type: "APPLY", path: [method], argumentList };
}

/**
 * Whether `data`, posted by the worker, is the answer to a call: an object with a string `id`.
 *
 * @example
 * ```ts
 * isComlinkAnswer({ id: "1", type: "RAW", value: 3 }); // true
 * isComlinkAnswer("hello"); // false
 * ```
 */
export function isComlinkAnswer(data: unknown): data is ComlinkAnswer {
  return typeof data === "object" && data !== null && typeof (data as { id?: unknown }).id === "string";
}

/**
 * The value an answer carries: a raw value as is, a handled one through its transfer
 * handler's `deserialize` (the error handler's throws the typed error the worker threw).
 *
 * @example
 * ```ts
 * import * as Comlink from "comlink";
 *
 * comlinkAnswerValue(Comlink, { id: "1", type: "RAW", value: 3 }); // 3
 * ```
 * @throws what the named handler throws (the typed error the worker threw).
 * @throws {InternalError} when no handler on this side has the name the answer gives.
 */
export function comlinkAnswerValue(comlink: ComlinkLike, answer: ComlinkAnswer): unknown {
  if (answer.type !== "HANDLER") return answer.value;
  const handler = comlink.transferHandlers.get(answer.name ?? "");
  if (!handler) {
    throw new InternalError(`the worker answered through a transfer handler this side lacks: ${JSON.stringify(answer.name)}`, { handler: answer.name });
  }
  return handler.deserialize(answer.value as never);
}
