/**
 * Which model the playground's turns use: the built-in local model, or the endpoint
 * provider the Model tab built (views/model-panel.ts). This file and the Model tab are the
 * only places that know how an endpoint provider is made and named.
 */
import type { Provider } from "../core/mod.ts";
import type { LocalModel } from "./local-model.ts";
import type { EndpointProvider } from "./endpoint-provider.ts";

export type { EndpointProvider };

/** The local model's named streaming speeds, in milliseconds per chunk. */
export const LOCAL_MODEL_SPEEDS = { relaxed: 60, normal: 28, fast: 8, instant: 1 } as const;

/** The provider in use, and how the composer names it. */
export class ProviderChoice {
  readonly #local: LocalModel;
  #endpoint: EndpointProvider | undefined;

  constructor(local: LocalModel) {
    this.#local = local;
  }

  /** The provider the next turn streams from. */
  get current(): Provider {
    return this.#endpoint ?? this.#local;
  }

  /** What the composer shows under the box. */
  get label(): string {
    return this.#endpoint ? `${this.#endpoint.identity.model} · ${this.#endpoint.origin}` : "Built-in local model · offline";
  }

  /** Streams the next turns from `provider`. */
  useEndpoint(provider: EndpointProvider): void {
    this.#endpoint = provider;
  }

  /** Streams the next turns from the built-in local model again. */
  useLocal(): void {
    this.#endpoint = undefined;
  }
}
