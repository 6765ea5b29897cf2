/**
 * Messages as DOM: user and assistant bubbles with their parts (Markdown text, tool
 * calls with their results, reasoning, files), status badges and usage. Everything
 * from a message goes through `textContent` or the safe Markdown renderer.
 */
import type { MessagePart, MessageRecord, ToolPart } from "../../core/mod.ts";
import { formatNumber, h } from "../dom.ts";
import { renderMarkdown, safeUrl } from "../markdown.ts";

/** How a message is shown besides its content. */
export interface MessageLook {
  /** `draft`: a recovered or live draft; `pending`: a run message not committed yet. */
  readonly state?: "committed" | "draft" | "pending" | "streaming";
  /** Shown as a small label on the bubble. */
  readonly note?: string;
}

/** One message as an article element. */
export function renderMessage(message: Pick<MessageRecord, "role" | "parts"> & Partial<MessageRecord>, look: MessageLook = {}): HTMLElement {
  const state = look.state ?? "committed";
  const role = message.role;
  const status = message.status;
  const article = h("article", {
    class: `message message-${role} message-${state}${status && status !== "completed" ? ` message-${status}` : ""}`,
    "data-sequence": message.sequence,
    "data-role": role,
    "aria-label": `${role === "user" ? "You" : "Assistant"}${message.sequence ? `, message ${message.sequence}` : ""}`,
  });
  const body = h("div", { class: "message-body" });
  for (const part of message.parts) body.append(renderPart(part));
  if (message.parts.length === 0 && state !== "committed") body.append(h("p", { class: "muted" }, state === "streaming" ? "…" : "(no output yet)"));
  article.append(body);

  const meta = h("div", { class: "message-meta" });
  if (message.sequence && state === "committed") meta.append(h("span", { class: "seq" }, `#${message.sequence}`));
  if (message.created_at) meta.append(h("time", { datetime: message.created_at }, new Date(message.created_at).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })));
  if (status === "stopped") meta.append(h("span", { class: "badge badge-warn" }, "stopped"));
  if (status === "failed") meta.append(h("span", { class: "badge badge-error" }, "failed"));
  if (look.note) meta.append(h("span", { class: `badge ${state === "draft" ? "badge-warn" : "badge-info"}` }, look.note));
  if (message.usage) {
    meta.append(h("span", { class: "usage", title: "Real usage reported by the provider for this step" }, `in ${formatNumber(message.usage.input_tokens)} · out ${formatNumber(message.usage.output_tokens)}`));
  }
  if (message.provider && role === "assistant") meta.append(h("span", { class: "model" }, message.provider.model));
  if (meta.childNodes.length > 0) article.append(meta);
  return article;
}

/** One part. */
export function renderPart(part: MessagePart): HTMLElement {
  switch (part.type) {
    case "text": {
      const div = h("div", { class: "part part-text markdown" });
      div.append(renderMarkdown(part.text));
      return div;
    }
    case "reasoning":
      return h("details", { class: "part part-reasoning" }, h("summary", {}, "Reasoning"), h("div", { class: "reasoning-text" }, part.text));
    case "reasoning-summary":
      return h("div", { class: "part part-reasoning-summary" }, h("span", { class: "label" }, "Reasoning summary"), h("div", {}, part.text));
    case "tool":
      return renderTool(part);
    case "file": {
      const url = part.url ? safeUrl(part.url) : undefined;
      const label = `${part.name ?? "file"} (${part.media_type})`;
      return h("div", { class: "part part-file" }, "📎 ", url ? h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, label) : label);
    }
    case "provider-context":
      return h("div", { class: "part part-context", title: "Opaque provider context, sent back only to the exact same provider, API and model" }, `provider context · ${part.provider}/${part.model}`);
  }
}

function renderTool(part: Pick<ToolPart, "tool_name" | "state" | "input" | "output" | "error">): HTMLElement {
  const state = part.state === "output-available" ? "done" : part.state === "output-error" ? "error" : "running";
  const card = h("div", { class: `part part-tool tool-${state}` });
  const head = h("div", { class: "tool-head" }, h("span", { class: "tool-icon", "aria-hidden": "true" }, "⚙"), h("span", { class: "tool-name" }, part.tool_name), h("code", { class: "tool-input" }, compactJson(part.input)));
  card.append(head);
  if (part.state === "output-available") card.append(h("div", { class: "tool-output" }, "→ ", h("code", {}, compactJson(part.output))));
  else if (part.state === "output-error") card.append(h("div", { class: "tool-output tool-error-text" }, `✕ ${part.error ?? "failed"}`));
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
