/**
 * A random id with a prefix, e.g. `m_3f9c…` for messages, `sum_…` for summaries.
 *
 * @example
 * ```ts
 * newId("m"); // "m_4a1f0c2e9b7d4c3a8e6f1b2d3c4e5f60"
 * ```
 */
export function newId(prefix: string): string {
  if (drawn + 16 > randomBytes.length) {
    crypto.getRandomValues(randomBytes);
    drawn = 0;
  }
  for (let i = 0; i < 16; i++) {
    // A UUID v4's version and variant bits, as before: the ids keep their shape.
    const byte = i === 6 ? (randomBytes[drawn + i]! & 0x0f) | 0x40 : i === 8 ? (randomBytes[drawn + i]! & 0x3f) | 0x80 : randomBytes[drawn + i]!;
    hexCodes[2 * i] = HEX_DIGITS.charCodeAt(byte >> 4);
    hexCodes[2 * i + 1] = HEX_DIGITS.charCodeAt(byte & 0x0f);
  }
  drawn += 16;
  return `${prefix}_${String.fromCharCode.apply(null, hexCodes)}`;
}

/**
 * Random bytes drawn 64 ids at a time (`crypto.getRandomValues`, a web-standard call): every
 * commit makes an id, and `randomUUID().replaceAll("-", "")` cost a UUID's formatting, then a
 * copy without its dashes (about 0.9 KB and 0.4 µs a message). The id is the same: 32 hex
 * digits of a version-4 UUID.
 */
const randomBytes = new Uint8Array(16 * 64);
/** How many of {@linkcode randomBytes} were used (all of them until the first id). */
let drawn = randomBytes.length;
const HEX_DIGITS = "0123456789abcdef";
/** The 32 hex digits of the id being made, as character codes (one array for every id). */
const hexCodes: number[] = new Array<number>(32).fill(0);
