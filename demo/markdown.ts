/**
 * A small, safe Markdown subset for message text: paragraphs (single newlines kept as
 * line breaks), headings, fenced code blocks, bullet and numbered lists, quotes,
 * `inline code`, **bold**, *italic*, and links. It builds DOM nodes with `textContent`
 * only, so markup in the text (`<script>`, `<img onerror>`, …) shows as text and never
 * runs. A link becomes an anchor only for an absolute `http:` / `https:` URL, opened in
 * a new tab with `rel="noopener noreferrer"`; any other scheme (`javascript:`, `data:`,
 * relative paths) keeps its label as plain text.
 */
import { h } from "./dom.ts";

/** Renders `text` as a fragment of safe elements. */
export function renderMarkdown(text: string): DocumentFragment {
  const fragment = document.createDocumentFragment();
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    const fence = /^\s*(```|~~~)\s*([\w+-]*)\s*$/.exec(line);
    if (fence) {
      const body: string[] = [];
      i++;
      while (i < lines.length && !lines[i]!.trim().startsWith(fence[1]!)) body.push(lines[i++]!);
      i++; // the closing fence (or the end of the text)
      const code = h("code", fence[2] ? { "data-lang": fence[2] } : {}, body.join("\n"));
      fragment.append(h("pre", { class: "md-code" }, code));
      continue;
    }
    if (line.trim() === "") {
      i++;
      continue;
    }
    const heading = /^(#{1,4})\s+(.*)$/.exec(line);
    if (heading) {
      const level = Math.min(6, heading[1]!.length + 2) as 3 | 4 | 5 | 6;
      fragment.append(h(`h${level}`, { class: "md-heading" }, ...inline(heading[2]!)));
      i++;
      continue;
    }
    if (/^\s*([-*+])\s+/.test(line) || /^\s*\d+[.)]\s+/.test(line)) {
      const ordered = /^\s*\d+[.)]\s+/.test(line);
      const marker = ordered ? /^\s*\d+[.)]\s+/ : /^\s*[-*+]\s+/;
      const list = h(ordered ? "ol" : "ul", { class: "md-list" });
      while (i < lines.length && marker.test(lines[i]!)) {
        let item = lines[i]!.replace(marker, "");
        i++;
        // Indented continuation lines belong to the item.
        while (i < lines.length && /^\s{2,}\S/.test(lines[i]!) && !marker.test(lines[i]!)) item += `\n${lines[i++]!.trim()}`;
        list.append(h("li", {}, ...inline(item)));
      }
      fragment.append(list);
      continue;
    }
    if (/^\s*>/.test(line)) {
      const quoted: string[] = [];
      while (i < lines.length && /^\s*>/.test(lines[i]!)) quoted.push(lines[i++]!.replace(/^\s*>\s?/, ""));
      const quote = h("blockquote", { class: "md-quote" });
      quote.append(renderMarkdown(quoted.join("\n")));
      fragment.append(quote);
      continue;
    }
    const paragraph: string[] = [];
    while (i < lines.length && lines[i]!.trim() !== "" && !startsBlock(lines[i]!)) paragraph.push(lines[i++]!);
    if (paragraph.length === 0) paragraph.push(lines[i++]!);
    fragment.append(h("p", {}, ...inline(paragraph.join("\n"))));
  }
  return fragment;
}

function startsBlock(line: string): boolean {
  return /^\s*(```|~~~)/.test(line) || /^#{1,4}\s/.test(line) || /^\s*[-*+]\s+/.test(line) || /^\s*\d+[.)]\s+/.test(line) || /^\s*>/.test(line);
}

/**
 * Inline spans. One regular expression finds the earliest construct; text before it is
 * a text node. Groups: 1 code, 2 bold, 3 italic (*), 4 italic (_), 5+6 link, 7 bare URL.
 */
const INLINE =
  /`([^`\n]+)`|\*\*(?=\S)([\s\S]*?\S)\*\*|\*(?=[^\s*])([^*\n]*?[^\s*])\*|(?<![\w])_(?=\S)([^_\n]*?\S)_(?![\w])|\[([^\]\n]+)\]\(([^)\s]*)\)|(https?:\/\/[^\s<>()"']+[^\s<>()"'.,;:!?])/;

function inline(text: string): Node[] {
  const nodes: Node[] = [];
  let rest = text;
  while (rest.length > 0) {
    const match = INLINE.exec(rest);
    if (!match) {
      nodes.push(...textWithBreaks(rest));
      break;
    }
    if (match.index > 0) nodes.push(...textWithBreaks(rest.slice(0, match.index)));
    const [whole, code, bold, italic, underscore, label, href, bare] = match;
    if (code !== undefined) nodes.push(h("code", { class: "md-inline-code" }, code));
    else if (bold !== undefined) nodes.push(h("strong", {}, ...inline(bold)));
    else if (italic !== undefined) nodes.push(h("em", {}, ...inline(italic)));
    else if (underscore !== undefined) nodes.push(h("em", {}, ...inline(underscore)));
    else if (label !== undefined) nodes.push(link(label, href ?? ""));
    else if (bare !== undefined) nodes.push(link(bare, bare));
    rest = rest.slice(match.index + whole.length);
  }
  return nodes;
}

function textWithBreaks(text: string): Node[] {
  const nodes: Node[] = [];
  text.split("\n").forEach((line, i) => {
    if (i > 0) nodes.push(document.createElement("br"));
    if (line !== "") nodes.push(document.createTextNode(line));
  });
  return nodes;
}

/** An anchor for an absolute http(s) URL; anything else stays text. */
function link(label: string, href: string): Node {
  const url = safeUrl(href);
  if (!url) return document.createTextNode(label === href ? label : `${label} (${href})`);
  return h("a", { href: url, target: "_blank", rel: "noopener noreferrer", class: "md-link" }, label);
}

/** The normalized URL when it is absolute http(s), else `undefined`. */
export function safeUrl(href: string): string | undefined {
  try {
    const url = new URL(href);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : undefined;
  } catch {
    return undefined;
  }
}
