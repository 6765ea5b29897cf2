/**
 * Comlink helpers shared by the page ({@linkcode WorkerStorage}) and the storage worker.
 *
 * @module
 */
import * as Comlink from "comlink";
import { deserializeError, serializeError, type SerializedError } from "../core/mod.ts";

/** The name under which both sides register the handler; it must be the same on both. */
export const ERROR_TRANSFER_HANDLER = "sessionfold-error";

/**
 * Makes typed errors survive the Comlink hop. Plain Comlink rebuilds a thrown error as a
 * bare `Error` with only `message`, `name` and `stack`; this handler sends
 * `serializeError(e)` instead and rethrows `deserializeError(data)`, so the page sees the
 * same class (`instanceof StorageFullError`), `code` and `details`. A value that is not a
 * sessionfold error arrives as an `InternalError` (code `internal`).
 *
 * Comlink consults its handlers in insertion order and its built-in `"throw"` handler
 * claims every thrown value, so this one borrows the built-in's `canHandle` and is placed
 * before it. Registering twice changes nothing. Call it on both sides.
 *
 * @example
 * ```ts
 * registerErrorTransfer(); // in the page and in the worker, before the first call
 * ```
 */
export function registerErrorTransfer(): void {
  const handlers = Comlink.transferHandlers;
  if (handlers.has(ERROR_TRANSFER_HANDLER)) return;
  const builtin = handlers.get("throw");
  if (!builtin) throw new Error('comlink has no built-in "throw" transfer handler to take over');
  const handler: Comlink.TransferHandler<{ value: unknown }, SerializedError> = {
    canHandle: (value): value is { value: unknown } => builtin.canHandle(value),
    serialize: ({ value }) => [serializeError(value), []],
    deserialize: (data) => {
      throw deserializeError(data);
    },
  };
  handlers.delete("throw");
  handlers.set(ERROR_TRANSFER_HANDLER, handler as Comlink.TransferHandler<unknown, unknown>);
  handlers.set("throw", builtin);
}

/**
 * `value` marked so that `bytes.buffer` is transferred rather than copied, when `bytes`
 * owns its whole buffer (a fresh array read from IndexedDB does); otherwise `value` as is.
 */
export function withTransfer<T>(value: T, bytes: Uint8Array): T {
  const owns = bytes.buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.byteLength > 0;
  return owns ? Comlink.transfer(value, [bytes.buffer as ArrayBuffer]) : value;
}
