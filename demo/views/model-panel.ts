/**
 * The Model tab: the built-in local model's streaming speed, and an OpenAI-compatible
 * endpoint whose base URL, model and key live only in this tab's memory (the key only
 * inside the provider object it builds; nothing here stores or logs any of them).
 */
import { h, replaceChildren } from "../dom.ts";
import { createEndpointProvider, type EndpointProvider } from "../endpoint-provider.ts";
import { toast } from "./toast.ts";

/** What the panel needs from the app. */
export interface ModelPanelHost {
  /** Named streaming speeds, in milliseconds per chunk. */
  readonly speeds: Readonly<Record<string, number>>;
  chunkDelayMs(): number;
  setChunkDelayMs(ms: number): void;
  /** Switches the app to an endpoint provider. */
  useEndpoint(provider: EndpointProvider): void;
  /** Switches back to the built-in local model. */
  useLocal(): void;
}

/** Renders the Model tab into `root` and wires it. */
export function bindModelPanel(root: HTMLElement, host: ModelPanelHost): void {
  let active: EndpointProvider | undefined;
  const status = h("p", { class: "small", id: "model-status", "aria-live": "polite" });
  const describeStatus = () => {
    status.textContent = active
      ? `Using ${active.identity.model} at ${active.origin}. The key is held in this tab's memory only.`
      : "Using the built-in local model: offline, deterministic, with the clock, calculator and dice tools.";
  };
  const speed = h(
    "select",
    { id: "model-speed", onchange: (e: Event) => host.setChunkDelayMs(Number((e.target as HTMLSelectElement).value)) },
    ...Object.entries(host.speeds).map(([name, ms]) =>
      h("option", { value: ms, selected: ms === host.chunkDelayMs() }, `${name[0]!.toUpperCase()}${name.slice(1)} (${ms} ms per chunk)`)
    ),
  );
  if (!Object.values(host.speeds).includes(host.chunkDelayMs() as never)) {
    speed.append(h("option", { value: host.chunkDelayMs(), selected: true }, `Custom (${host.chunkDelayMs()} ms per chunk)`));
  }
  const baseUrl = h("input", { id: "openai-base-url", type: "url", value: "https://api.openai.com/v1", autocomplete: "off", spellcheck: "false" });
  const model = h("input", { id: "openai-model", type: "text", value: "gpt-4o-mini", autocomplete: "off", spellcheck: "false" });
  const key = h("input", { id: "openai-key", type: "password", autocomplete: "off", spellcheck: "false", placeholder: "sk-…" });
  const error = h("p", { class: "error small", role: "alert" });
  const useEndpoint = h("button", { type: "submit", class: "button button-primary" }, "Use endpoint");
  const useLocal = h("button", { type: "button", class: "button" }, "Use local model");
  const endpointForm = h("form", { class: "card", autocomplete: "off" });
  endpointForm.addEventListener("submit", (event) => {
    event.preventDefault();
    error.textContent = "";
    try {
      active = createEndpointProvider({ baseUrl: baseUrl.value, model: model.value, apiKey: key.value });
      host.useEndpoint(active);
      toast(`Using ${active.identity.model}. Set context_window in Agent settings to that model's window.`);
    } catch (e) {
      error.textContent = e instanceof Error ? e.message : String(e);
    }
    describeStatus();
  });
  useLocal.addEventListener("click", () => {
    active = undefined;
    host.useLocal();
    describeStatus();
  });
  describeStatus();
  replaceChildren(
    root,
    status,
    h(
      "div",
      { class: "card" },
      h("h3", {}, "Built-in local model"),
      h(
        "p",
        { class: "small muted" },
        "Streams deterministic replies in small chunks, calls a tool now and then, and reports usage: input = the core's estimate of the composed request, output = characters / 4.",
      ),
      h("label", { class: "field-label", for: "model-speed" }, "Streaming speed"),
      speed,
      h("div", { class: "row" }, useLocal),
    ),
    endpointForm,
  );
  endpointForm.append(
    h("h3", {}, "OpenAI-compatible endpoint"),
    h(
      "p",
      { class: "small muted" },
      "Calls /chat/completions with streaming from this page, through the AI SDK (@ai-sdk/openai-compatible) and sessionfold/ai-sdk. The base URL, model and key stay in memory: never stored, exported or logged. Reloading forgets them.",
    ),
    h("label", { class: "field-label", for: "openai-base-url" }, "Base URL"),
    baseUrl,
    h("label", { class: "field-label", for: "openai-model" }, "Model"),
    model,
    h("label", { class: "field-label", for: "openai-key" }, "API key"),
    key,
    error,
    h("div", { class: "row" }, useEndpoint),
  );
}
