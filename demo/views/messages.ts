/**
 * Messages as DOM: the AI SDK UI messages the chat holds (a turn per assistant message,
 * as `toUIMessages` and the UI message stream give them), as user and assistant bubbles
 * with their parts (Markdown text, reasoning, tool calls with their results, step
 * boundaries, files, sources), status badges and usage. Everything from a message goes
 * through `textContent` or the safe Markdown renderer.
 */
import type { MessageRecord } from "../../core/mod.ts";
import { formatNumber, h } from "../dom.ts";
import type { ChatMessage } from "../live-run.ts";
import { renderMarkdown, safeUrl } from "../markdown.ts";

type UIPart = ChatMessage["parts"][number];

/** How a message is shown besides its content. */
export interface MessageLook {
  /** `draft`: a recovered or another tab's draft; `pending`: a message not committed yet; `streaming`: this tab's reply. */
  readonly state?: "committed" | "draft" | "pending" | "streaming";
  /** Shown as a small label on the bubble. */
  readonly note?: string;
  /** The model that wrote an assistant turn (the stored provider identity; UI metadata does not carry it). */
  readonly model?: string;
}

/** One UI message as an article element; its id, sequence and status come from the message and its metadata. */
export function renderMessage(message: ChatMessage, look: MessageLook = {}): HTMLElement {
  const state = look.state ?? "committed";
  const role = message.role;
  const { sequence, status, usage, createdAt } = message.metadata ?? {};
  const article = h("article", {
    class: `message message-${role} message-${state}${status && status !== "completed" && status !== "streaming" ? ` message-${status}` : ""}`,
    "data-message-id": message.id,
    "data-sequence": sequence,
    "data-role": role,
    "aria-label": `${role === "user" ? "You" : "Assistant"}${sequence ? `, message ${sequence}` : ""}`,
  });
  const body = h("div", { class: "message-body" });
  let steps = 0;
  for (const part of message.parts) {
    if (part.type === "step-start") {
      // The first step opens the turn; each later one is a boundary the reader sees.
      if (++steps > 1) body.append(h("div", { class: "part part-step history-divider", "data-testid": "step-boundary" }, h("span", {}, `step ${steps}`)));
      continue;
    }
    const node = renderPart(part);
    if (node) body.append(node);
  }
  if (body.childNodes.length === 0 && state !== "committed") body.append(h("p", { class: "muted" }, state === "streaming" ? "…" : "(no output yet)"));
  article.append(body);

  const meta = h("div", { class: "message-meta" });
  if (sequence && state === "committed") {
    // A run's turn stores one message per step, in a row: a turn of several steps is `#first–#last`.
    meta.append(h("span", { class: "seq" }, steps > 1 ? `#${sequence}–#${sequence + steps - 1}` : `#${sequence}`));
  }
  if (createdAt) meta.append(h("time", { datetime: createdAt }, new Date(createdAt).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })));
  if (status === "stopped") meta.append(h("span", { class: "badge badge-warn" }, "stopped"));
  if (status === "failed") meta.append(h("span", { class: "badge badge-error" }, "failed"));
  if (look.note) meta.append(h("span", { class: `badge ${state === "draft" ? "badge-warn" : "badge-info"}` }, look.note));
  if (usage) {
    meta.append(
      h(
        "span",
        { class: "usage", title: "Real usage reported by the provider for the turn's last step" },
        `in ${formatNumber(usage.input_tokens)} · out ${formatNumber(usage.output_tokens)}`,
      ),
    );
  }
  if (look.model && role === "assistant") meta.append(h("span", { class: "model" }, look.model));
  if (meta.childNodes.length > 0) article.append(meta);
  return article;
}

/** One UI part other than a step boundary; `undefined` for parts the chat does not show. */
function renderPart(part: UIPart): HTMLElement | undefined {
  switch (part.type) {
    case "text": {
      const div = h("div", { class: "part part-text markdown" });
      div.append(renderMarkdown(part.text));
      return div;
    }
    case "reasoning":
      if ((part.providerMetadata?.["sessionfold"] as { kind?: string } | undefined)?.kind === "reasoning-summary") {
        return h("div", { class: "part part-reasoning-summary" }, h("span", { class: "label" }, "Reasoning summary"), h("div", {}, part.text));
      }
      return h(
        "details",
        { class: "part part-reasoning", ...(part.state === "streaming" ? { open: true } : {}) },
        h("summary", {}, "Reasoning"),
        h("div", { class: "reasoning-text" }, part.text),
      );
    case "file": {
      const url = safeUrl(part.url);
      const label = `${part.filename ?? "file"} (${part.mediaType})`;
      return h("div", { class: "part part-file" }, "📎 ", url ? h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, label) : label);
    }
    case "source-url": {
      const url = safeUrl(part.url);
      const label = part.title ?? part.url;
      return h("div", { class: "part part-source" }, "🔗 ", url ? h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, label) : label);
    }
    case "source-document":
      return h("div", { class: "part part-source" }, "📄 ", `${part.title} (${part.mediaType})`);
    case "step-start":
      return undefined;
  }
  if (part.type === "dynamic-tool") return renderTool(part.toolName, part);
  if (part.type.startsWith("tool-")) return renderTool(part.type.slice("tool-".length), part as unknown as ToolLike);
  if (part.type.startsWith("data-")) {
    return h("div", { class: "part part-data" }, h("span", { class: "label" }, part.type), " ", h("code", {}, compactJson((part as { data?: unknown }).data)));
  }
  return undefined;
}

/** What the chat reads of a UI tool part (static `tool-<name>` or `dynamic-tool`). */
interface ToolLike {
  readonly state: string;
  readonly input?: unknown;
  readonly output?: unknown;
  readonly errorText?: string;
}

function renderTool(name: string, part: ToolLike): HTMLElement {
  const state = part.state === "output-available" ? "done" : part.state === "output-error" || part.state === "output-denied" ? "error" : "running";
  const card = h("div", { class: `part part-tool tool-${state}`, "data-tool-state": part.state });
  const head = h(
    "div",
    { class: "tool-head" },
    h("span", { class: "tool-icon", "aria-hidden": "true" }, "⚙"),
    h("span", { class: "tool-name" }, name),
    h("code", { class: "tool-input" }, compactJson(part.input)),
  );
  card.append(head);
  if (part.state === "output-available") card.append(h("div", { class: "tool-output" }, "→ ", h("code", {}, compactJson(part.output))));
  else if (part.state === "output-error") card.append(h("div", { class: "tool-output tool-error-text" }, `✕ ${part.errorText ?? "failed"}`));
  else if (part.state === "output-denied") card.append(h("div", { class: "tool-output tool-error-text" }, "✕ denied"));
  else card.append(h("div", { class: "tool-output muted" }, "running…"));
  return card;
}

function compactJson(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? "null";
  } catch {
    text = String(value);
  }
  return text.length > 240 ? `${text.slice(0, 240)}…` : text;
}

/** A one-line digest of a message, for the history panel. */
export function messageDigest(message: MessageRecord): string {
  const text = message.parts
    .map((p) => (p.type === "text" ? p.text : p.type === "tool" ? `⚙ ${p.tool_name}` : p.type === "file" ? `📎 ${p.name ?? p.media_type}` : ""))
    .filter((t) => t !== "")
    .join(" · ")
    .replace(/\s+/g, " ")
    .trim();
  return text.length > 110 ? `${text.slice(0, 110)}…` : text || "(no text)";
}
