/**
 * The web-standard globals the core may use, and nothing else. The core is
 * type-checked with `lib: ["ES2023"]` plus this file, without Node's or the DOM's
 * types, so a use of any other platform API fails `npm run typecheck`. Every
 * declaration here exists in Node ≥ 20, Deno, Bun, browsers and workers.
 */
// A global value is declared with `var` (a `let` or `const` would not be a property of globalThis).
// deno-lint-ignore-file no-var

declare class TextEncoder {
  readonly encoding: string;
  encode(input?: string): Uint8Array;
}

declare class TextDecoder {
  constructor(label?: string, options?: { fatal?: boolean; ignoreBOM?: boolean });
  readonly encoding: string;
  decode(input?: ArrayBufferView | ArrayBuffer, options?: { stream?: boolean }): string;
}

interface AbortSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  throwIfAborted(): void;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}
declare var AbortSignal: {
  prototype: AbortSignal;
  abort(reason?: unknown): AbortSignal;
  timeout(milliseconds: number): AbortSignal;
  any(signals: AbortSignal[]): AbortSignal;
};

declare class AbortController {
  readonly signal: AbortSignal;
  abort(reason?: unknown): void;
}

declare var crypto: {
  getRandomValues<T extends ArrayBufferView>(array: T): T;
  randomUUID(): string;
};

declare function structuredClone<T>(value: T): T;
declare function queueMicrotask(callback: () => void): void;
declare function setTimeout(handler: () => void, timeout?: number): unknown;
declare function clearTimeout(id: unknown): void;
declare function atob(data: string): string;
declare function btoa(data: string): string;

declare var console: {
  log(...data: unknown[]): void;
  warn(...data: unknown[]): void;
  error(...data: unknown[]): void;
};
