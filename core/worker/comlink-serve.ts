/**
 * The serving half of Comlink's message protocol, for an API of plain-data calls: each
 * `APPLY` message a caller posts (Comlink's own `wrap`, or {@linkcode WorkerStorageClient}
 * through `comlink-wire.ts`) calls one method of the API, and its answer goes back under the
 * call's id exactly as `Comlink.expose` posts it: the value raw (its buffers transferred where
 * the API marked them), a thrown error through the transfer handler that claims it; a call
 * posted without an id owes no answer and gets none (a compaction's stage: one message fewer
 * each way). It replaces `Comlink.expose` in the storage workers, whose generic dispatch (a property path
 * walked twice, every argument mapped, an answer built by two object spreads after two
 * promise turns) was about a sixth of what the worker spends on a held commit besides its
 * system calls (docs/decisions.md, "The held commit through the worker, both threads").
 *
 * @module
 */
import { InternalError } from "../errors.ts";
import type { MessageEndpoint } from "./comlink-wire.ts";
import { type ComlinkLike, ERROR_TRANSFER_HANDLER, NOTHING_MOVED, registerErrorTransfer } from "./transfer.ts";

/** A message as a caller posts it; only what this half reads. */
interface IncomingCall {
  readonly id?: unknown;
  readonly type?: unknown;
  readonly path?: unknown;
  readonly argumentList?: unknown;
}

/**
 * Serves the object `build` returns at `at` (where `Comlink.expose` would serve it: a worker's
 * global scope, or Comlink's node adapter around `parentPort`; taken as it comes, as
 * `WorkerLink.endpoint` is), answering Comlink's `APPLY` calls of its
 * own methods (the only calls {@linkcode WorkerStorageClient} makes). `build` gets the
 * `comlink` to mark answers with (`transfer`, `withTransfer`): its transfer list is this
 * server's, so a marked value's buffers move with its answer as under `Comlink.expose`. A
 * call of anything else (another message type, a name that is not a method of the API) is
 * answered with an `InternalError`, so no caller waits forever. Typed errors cross with
 * their class (`registerErrorTransfer`, registered here too).
 *
 * @example
 * ```ts
 * import * as Comlink from "comlink";
 *
 * // In a worker: answers `client.read("notes.txt")` with the text (the runtimes build `storageWorkerApi` here).
 * serveComlinkCalls(Comlink, self as never, () => ({ read: (path: string) => `the text of ${path}` }));
 * ```
 * @throws {InternalError} when the given Comlink has no built-in "throw" transfer handler.
 */
export function serveComlinkCalls(comlink: ComlinkLike, at: unknown, build: (comlink: ComlinkLike) => object): void {
  registerErrorTransfer(comlink);
  const endpoint = at as MessageEndpoint;
  const marked = new WeakMap<object, unknown[]>();
  const api = build({
    transferHandlers: comlink.transferHandlers,
    transfer: (value, transfers) => (marked.set(value as object, transfers), value),
  }) as Record<string, unknown>;
  const answer = (id: string, value: unknown): void => {
    // As Comlink's `toWireValue`: a handler that claims the value serializes it, else it goes raw.
    for (const [name, handler] of comlink.transferHandlers) {
      if (handler.canHandle(value)) {
        const [serialized, transfers] = handler.serialize(value as never);
        endpoint.postMessage({ id, type: "HANDLER", name, value: serialized }, transfers as never[]);
        return;
      }
    }
    const transfers = typeof value === "object" && value !== null ? marked.get(value) : undefined;
    endpoint.postMessage({ id, type: "RAW", value }, (transfers ?? NOTHING_MOVED) as never[]);
  };
  const fail = (id: string, error: unknown): void => {
    const [serialized] = comlink.transferHandlers.get(ERROR_TRANSFER_HANDLER)!.serialize({ value: error } as never);
    endpoint.postMessage({ id, type: "HANDLER", name: ERROR_TRANSFER_HANDLER, value: serialized }, NOTHING_MOVED as never[]);
  };
  const settle = (id: string | undefined, result: unknown): void => {
    // A call sent without an id owes no answer: its outcome is the API's to report (a stage's, by the plan that names it).
    if (id === undefined) return void Promise.resolve(result).catch(() => undefined);
    // The answer is posted as soon as the result settles: one promise turn, where Comlink's `.catch().then()` takes two.
    Promise.resolve(result).then(
      (value) => {
        try {
          answer(id, value);
        } catch (error) {
          fail(id, new InternalError(`the storage worker's answer could not be sent: ${error instanceof Error ? error.message : String(error)}`));
        }
      },
      (error: unknown) => fail(id, error),
    );
  };
  endpoint.addEventListener("message", ({ data }) => {
    const call = data as IncomingCall | null | undefined;
    if (typeof call !== "object" || call === null || (call.id !== undefined && typeof call.id !== "string")) return;
    const { id, path, argumentList } = call as IncomingCall & { readonly id?: string };
    const method = Array.isArray(path) && path.length === 1 && typeof path[0] === "string" ? path[0] : undefined;
    const target = method !== undefined && Object.hasOwn(api, method) ? api[method] : undefined;
    if (call.type !== "APPLY" || typeof target !== "function" || (argumentList !== undefined && !Array.isArray(argumentList))) {
      settle(
        id,
        Promise.reject(new InternalError(`the storage worker serves method calls of its API, got a ${JSON.stringify(call.type)} of ${JSON.stringify(path)}`)),
      );
      return;
    }
    let result: unknown;
    try {
      const args: unknown[] = [];
      for (const wire of (argumentList ?? []) as { readonly type?: unknown; readonly name?: unknown; readonly value?: unknown }[]) {
        args.push(argumentOf(comlink, wire));
      }
      result = (target as (...args: unknown[]) => unknown).apply(api, args);
    } catch (error) {
      result = Promise.reject(error);
    }
    settle(id, result);
  });
  endpoint.start?.();
}

/** An argument as Comlink's `fromWireValue` reads it: raw as is, handled through its transfer handler. */
function argumentOf(comlink: ComlinkLike, wire: { readonly type?: unknown; readonly name?: unknown; readonly value?: unknown }): unknown {
  if (wire?.type !== "HANDLER") return wire?.value;
  const handler = comlink.transferHandlers.get(String(wire.name));
  if (!handler) {
    throw new InternalError(`a call's argument came through a transfer handler this side lacks: ${JSON.stringify(wire.name)}`, { handler: wire.name });
  }
  return handler.deserialize(wire.value as never);
}
