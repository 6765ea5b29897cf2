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
  encodeInto(source: string, destination: Uint8Array): { read: number; written: number };
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

/** An opaque WebCrypto key (the subset the core's encryption uses: AES-GCM, PBKDF2). */
interface CryptoKey {
  readonly type: string;
  readonly extractable: boolean;
  readonly algorithm: { readonly name: string };
  readonly usages: string[];
}

/** The subset of WebCrypto's `SubtleCrypto` that `core/encryption/` uses. */
interface SubtleCrypto {
  importKey(
    format: "raw",
    keyData: Uint8Array<ArrayBuffer>,
    algorithm: { name: string; length?: number } | string,
    extractable: boolean,
    usages: ("encrypt" | "decrypt" | "deriveKey" | "deriveBits")[],
  ): Promise<CryptoKey>;
  encrypt(
    algorithm: { name: "AES-GCM"; iv: Uint8Array<ArrayBuffer>; additionalData?: Uint8Array<ArrayBuffer> },
    key: CryptoKey,
    data: Uint8Array<ArrayBuffer>,
  ): Promise<ArrayBuffer>;
  decrypt(
    algorithm: { name: "AES-GCM"; iv: Uint8Array<ArrayBuffer>; additionalData?: Uint8Array<ArrayBuffer> },
    key: CryptoKey,
    data: Uint8Array<ArrayBuffer>,
  ): Promise<ArrayBuffer>;
  digest(algorithm: "SHA-256", data: Uint8Array<ArrayBuffer>): Promise<ArrayBuffer>;
  deriveKey(
    algorithm: { name: "PBKDF2"; salt: Uint8Array<ArrayBuffer>; iterations: number; hash: "SHA-256" },
    baseKey: CryptoKey,
    derivedKeyType: { name: "AES-GCM"; length: 256 },
    extractable: boolean,
    usages: ("encrypt" | "decrypt")[],
  ): Promise<CryptoKey>;
}

declare var crypto: {
  getRandomValues<T extends ArrayBufferView>(array: T): T;
  randomUUID(): string;
  readonly subtle: SubtleCrypto;
};

// fetch's Request, Response and Headers, as far as the sync handler and client use them.
interface Headers {
  get(name: string): string | null;
  set(name: string, value: string): void;
}
declare var Headers: { prototype: Headers; new (init?: Record<string, string>): Headers };

interface Body {
  readonly body: unknown;
  arrayBuffer(): Promise<ArrayBuffer>;
  text(): Promise<string>;
}

interface Request extends Body {
  readonly method: string;
  readonly url: string;
  readonly headers: Headers;
  readonly signal: AbortSignal;
}
declare var Request: {
  prototype: Request;
  new (input: string, init?: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array; signal?: AbortSignal }): Request;
};

interface Response extends Body {
  readonly status: number;
  readonly ok: boolean;
  readonly headers: Headers;
}
declare var Response: {
  prototype: Response;
  new (body?: string | Uint8Array | null, init?: { status?: number; headers?: Record<string, string> }): Response;
};

declare function fetch(
  input: string | Request,
  init?: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array; signal?: AbortSignal },
): Promise<Response>;

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
