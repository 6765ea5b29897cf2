import { deserializeError, type SerializedError, serializeError } from "./error-wire.ts";
import { InternalError } from "../errors.ts";

/** One Comlink transfer handler, as far as these helpers use it. */
export interface TransferHandlerLike {
  canHandle(value: unknown): boolean;
  serialize(value: never): [unknown, unknown[]];
  deserialize(value: never): unknown;
}

/**
 * The slice of Comlink that the worker helpers need. A runtime passes the `comlink`
 * module itself: the core never imports Comlink (docs/decisions.md), yet the logic lives once.
 */
export interface ComlinkLike {
  readonly transferHandlers: Map<string, TransferHandlerLike>;
  transfer<T>(value: T, transfers: never[]): T;
}

/**
 * The transfer list of a message that moves nothing: one frozen list for every such call and
 * answer (`postMessage` only reads it), not a new empty array each time.
 */
export const NOTHING_MOVED: readonly unknown[] = Object.freeze([]);

/** The name under which both sides register the handler; it must be the same on both. */
export const ERROR_TRANSFER_HANDLER = "sessionfold-error";

/**
 * Makes typed errors survive a Comlink hop. Plain Comlink rebuilds a thrown error as a
 * bare `Error` with only `message`, `name` and `stack`; this handler sends
 * `serializeError(e)` instead and rethrows `deserializeError(data)`, so the caller sees the
 * same class (`instanceof StorageFullError`), `code` and `details`. A value that is not a
 * sessionfold error arrives as an `InternalError`: nothing untyped crosses.
 *
 * Comlink consults its handlers in insertion order and its built-in `"throw"` handler
 * claims every thrown value, so this one borrows the built-in's `canHandle` and is placed
 * before it. Registering twice changes nothing. Call it on both sides of the hop.
 *
 * @example
 * ```ts
 * import * as Comlink from "comlink";
 * registerErrorTransfer(Comlink); // in the host and in the worker, before the first call
 * ```
 * @throws {InternalError} when the given Comlink has no built-in "throw" handler.
 */
export function registerErrorTransfer(comlink: ComlinkLike): void {
  const handlers = comlink.transferHandlers;
  if (handlers.has(ERROR_TRANSFER_HANDLER)) return;
  const builtin = handlers.get("throw");
  if (!builtin) throw new InternalError('comlink has no built-in "throw" transfer handler to take over');
  const handler = {
    canHandle: (value: unknown) => builtin.canHandle(value),
    serialize: ({ value }: { value: unknown }): [SerializedError, unknown[]] => [serializeError(value), []],
    deserialize: (data: SerializedError) => {
      throw deserializeError(data);
    },
  };
  handlers.delete("throw");
  handlers.set(ERROR_TRANSFER_HANDLER, handler as TransferHandlerLike);
  handlers.set("throw", builtin);
}

/**
 * `value` marked so that `bytes.buffer` is transferred rather than copied when `bytes` owns
 * its whole buffer and is large enough to matter; otherwise `value` as is (structured clone
 * copies it). Comlink looks transfers up by the top-level value of a message.
 *
 * @example
 * ```ts
 * import * as Comlink from "comlink";
 * declare const bytes: Uint8Array;
 *
 * const message = withTransfer(Comlink, { bytes, size: bytes.length }, bytes);
 * ```
 */
export function withTransfer<T>(comlink: ComlinkLike, value: T, bytes: Uint8Array): T {
  return ownsBuffer(bytes, ANSWER_TRANSFER_BYTES) ? comlink.transfer(value, [bytes.buffer as never]) : value;
}

/**
 * True when detaching `bytes.buffer` affects nothing but `bytes` and saves a real copy: at
 * least `minBytes` (64 KiB unless given; an answer the worker posts back moves from 4 KiB,
 * {@linkcode ANSWER_TRANSFER_BYTES}).
 *
 * @example
 * ```ts
 * ownsBuffer(new Uint8Array(100_000)); // true
 * ownsBuffer(new Uint8Array(100_000).subarray(1)); // false: the rest of its buffer would go too
 * ```
 */
export function ownsBuffer(bytes: Uint8Array, minBytes: number = 64 * 1024): boolean {
  return (
    bytes.buffer instanceof ArrayBuffer &&
    bytes.byteOffset === 0 &&
    bytes.byteLength === bytes.buffer.byteLength &&
    bytes.byteLength >= minBytes
  );
}

/**
 * From this size a buffer a store read returns is moved to the host rather than copied: a
 * session's `active.jsonl` (tens of KiB) crosses without a copy on each open (a transfer
 * costs less than copying it from a few KiB on).
 */
export const ANSWER_TRANSFER_BYTES = 4 * 1024;
