/**
 * Short, escaped quotes of file content for error messages. A message may be printed to a
 * terminal, logged or sent on: it quotes at most {@linkcode EXCERPT_CHARS} characters of
 * what it found, with every character outside printable ASCII escaped, so a file can neither
 * flood a message nor move a terminal's cursor, and no more than a few bytes of it leave.
 *
 * @module
 */

/** The most characters of a file an error message quotes. */
export const EXCERPT_CHARS = 24;

/**
 * `text` quoted for a message: at most `max` characters, `"`-quoted, with `"` and `\`
 * escaped and every character outside printable ASCII written `\uXXXX` (control
 * characters, DEL, C1 controls, bidirectional overrides, everything non-ASCII). A cut
 * quote ends with `…` outside the quotes.
 *
 * @example
 * ```ts
 * escapedExcerpt("root:x:0:0:root:/root:/bin/bash\n", 8); // '"root:x:0"…'
 * escapedExcerpt("\u001b[2J"); // '"\\u001b[2J"'
 * ```
 */
export function escapedExcerpt(text: string, max = EXCERPT_CHARS): string {
  const shown = [...text.slice(0, max * 2)].slice(0, max).join("");
  const cut = shown.length < text.length;
  const escaped = shown.replace(/["\\]|[^\x20-\x7e]/gu, (ch) => {
    if (ch === '"' || ch === "\\") return `\\${ch}`;
    return [...ch].map((unit) => unitEscape(unit)).join("");
  });
  return `"${escaped}"${cut ? "…" : ""}`;
}

function unitEscape(ch: string): string {
  let out = "";
  for (let i = 0; i < ch.length; i++) out += `\\u${ch.charCodeAt(i).toString(16).padStart(4, "0")}`;
  return out;
}

/**
 * A short account of a value for error messages (a JSON value, or a caller's argument):
 * `"image"`, `3`, `null`, `an array`, `an object`, `nothing` (absent), `bigint`, `function`.
 *
 * @example
 * ```ts
 * describeValue("image"); // '"image"'
 * describeValue(undefined); // "nothing"
 * ```
 */
export function describeValue(value: unknown): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  switch (typeof value) {
    case "string":
      return escapedExcerpt(value, 40);
    case "number":
    case "boolean":
      return String(value);
    case "object":
      return "an object";
    default:
      return typeof value;
  }
}
