import * as Comlink from "comlink";
import { deserializeError, serializeError, type SerializedError } from "../core/errors.ts";

/** The name under which both threads register the handler; it must be the same on both sides. */
export const ERROR_TRANSFER_HANDLER = "sessionfold-error";

/**
 * Makes typed errors survive the Comlink hop. Plain Comlink rebuilds a thrown error as a
 * bare `Error` with only `message`, `name` and `stack`; this handler sends
 * `serializeError(e)` instead and rethrows `deserializeError(data)`, so the host sees the
 * same class (`instanceof StorageFullError`), `code` and `details`. A value that is not a
 * sessionfold error becomes an `InternalError` (code `internal`): nothing untyped arrives.
 *
 * Comlink consults its handlers in insertion order and its built-in `"throw"` handler
 * claims every thrown value, so this one takes over the built-in's `canHandle` and is
 * placed before it. Registering twice changes nothing. Call it in both threads.
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
 * `value` marked so that `bytes.buffer` is transferred, not copied, when `bytes` owns its whole
 * buffer and is large enough to matter; otherwise `value` as is (structured clone copies it).
 * Comlink looks transfers up by the top-level value of a message, so mark what is sent.
 */
export function withTransfer<T>(value: T, bytes: Uint8Array): T {
  return ownsBuffer(bytes) ? Comlink.transfer(value, [bytes.buffer as ArrayBuffer]) : value;
}

/** True when detaching `bytes.buffer` affects nothing but `bytes` and saves a real copy (≥ 64 KiB). */
export function ownsBuffer(bytes: Uint8Array): boolean {
  return (
    bytes.buffer instanceof ArrayBuffer &&
    bytes.byteOffset === 0 &&
    bytes.byteLength === bytes.buffer.byteLength &&
    bytes.byteLength >= 64 * 1024
  );
}
