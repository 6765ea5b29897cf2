import { describeValue, formatError, type FormatName } from "./errors.ts";

/** One step of a JSON path: an object key or an array index. */
export type PathKey = string | number;

/**
 * Where values come from: a file of a format, and how to find the 1-based line of the
 * value at a JSON path (a JSONL record is one line; a document looks the path up).
 */
export interface Site {
  readonly format: FormatName;
  readonly file: string;
  lineOf(path: readonly PathKey[]): number;
}

/**
 * A site for one JSONL line: every path inside the record is on that line.
 *
 * @example
 * ```ts
 * const site = lineSite("deepcode", "s1.v1.jsonl", 3);
 * site.lineOf(["content", 0]); // 3
 * ```
 */
export function lineSite(format: FormatName, file: string, line: number): Site {
  return { format, file, lineOf: () => line };
}

/**
 * `["history", 2, "User"]` → `$.history[2].User`.
 *
 * @example
 * ```ts
 * pathText(["content", 0, "type"]); // "$.content[0].type"
 * ```
 */
export function pathText(path: readonly PathKey[]): string {
  let out = "$";
  for (const key of path) out += typeof key === "number" ? `[${key}]` : /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
  return out;
}

/**
 * A JSON value being validated, with the site and path to name when it is not what the
 * format says. Every check either returns the typed value or throws a `FormatError`
 * naming the file, the line and the path.
 *
 * @example
 * ```ts
 * declare const text: string;
 *
 * const site: Site = { file: "file", format: "deepcode", lineOf: () => 3 };
 * const record = new Value(site, [], JSON.parse(text)).object();
 * const role = record.field("role").string(); // throws "file:3: $.role: found 3; expected a string"
 * ```
 */
export class Value {
  readonly site: Site;
  readonly raw: unknown;
  /** The path of a root value, or the parent and key of a child (its path is built only when needed). */
  readonly #root: readonly PathKey[] | undefined;
  readonly #parent: Value | undefined;
  readonly #key: PathKey | undefined;

  constructor(site: Site, path: readonly PathKey[], raw: unknown, parent?: Value, key?: PathKey) {
    this.site = site;
    this.raw = raw;
    this.#root = parent === undefined ? path : undefined;
    this.#parent = parent;
    this.#key = key;
  }

  /** The JSON path of this value, from the document's (or record's) root. */
  get path(): PathKey[] {
    if (this.#parent === undefined) return [...(this.#root ?? [])];
    const keys: PathKey[] = [this.#key!];
    let node: Value = this.#parent;
    while (node.#parent !== undefined) {
      keys.push(node.#key!);
      node = node.#parent;
    }
    return [...(node.#root ?? []), ...keys.reverse()];
  }

  /**
   * Throws a `FormatError` at this value.
   *
   * @throws {FormatError} always.
   */
  fail(expected: string, found: string = describeValue(this.raw)): never {
    const path = this.path;
    throw formatError(
      { format: this.site.format, file: this.site.file, line: this.site.lineOf(path), path: pathText(path) },
      found,
      expected,
    );
  }

  /** The value under `key` of this object (which {@linkcode object} already checked). */
  field(key: string): Value {
    const raw = this.raw as Record<string, unknown>;
    return new Value(this.site, [], Object.hasOwn(raw, key) ? raw[key] : undefined, this, key);
  }

  /** `true` when this value is absent or `null` (a serde `Option` that is `None`). */
  get absent(): boolean {
    return this.raw === undefined || this.raw === null;
  }

  /** This value, or `undefined` when absent or `null`. */
  optional(): Value | undefined {
    return this.absent ? undefined : this;
  }

  /**
   * Checks that this is a JSON object.
   *
   * @throws {FormatError} otherwise.
   */
  object(expected = "an object"): this {
    if (typeof this.raw !== "object" || this.raw === null || Array.isArray(this.raw)) this.fail(expected);
    return this;
  }

  /** The object's own keys (after {@linkcode object}). */
  keys(): string[] {
    return Object.keys(this.raw as object);
  }

  /**
   * This value as a string.
   *
   * @throws {FormatError} when it is not a string, or is empty and `nonEmpty` is set.
   */
  string(options: { nonEmpty?: boolean } = {}): string {
    if (typeof this.raw !== "string") this.fail(options.nonEmpty ? "a non-empty string" : "a string");
    if (options.nonEmpty && this.raw.length === 0) this.fail("a non-empty string");
    return this.raw;
  }

  /**
   * This value as a boolean.
   *
   * @throws {FormatError} otherwise.
   */
  boolean(): boolean {
    if (typeof this.raw !== "boolean") this.fail("true or false");
    return this.raw;
  }

  /**
   * This value as a non-negative safe integer (a `u64` that JavaScript holds exactly).
   *
   * @throws {FormatError} otherwise.
   */
  count(): number {
    if (typeof this.raw !== "number" || !Number.isSafeInteger(this.raw) || this.raw < 0) {
      this.fail(typeof this.raw === "number" && Number.isInteger(this.raw) && this.raw > 0 ? "an integer up to 2^53 - 1" : "a non-negative integer");
    }
    return this.raw;
  }

  /**
   * This value as an array of values.
   *
   * @throws {FormatError} otherwise.
   */
  array(expected = "an array"): Value[] {
    if (!Array.isArray(this.raw)) this.fail(expected);
    return this.raw.map((item, i) => new Value(this.site, [], item, this, i));
  }

  /**
   * A string-to-string map (`BTreeMap<String, String>`).
   *
   * @throws {FormatError} when it is not an object or a value is not a string.
   */
  stringMap(): Record<string, string> {
    this.object("an object of strings");
    const out: Record<string, string> = {};
    for (const key of this.keys()) out[key] = this.field(key).string();
    return out;
  }

  /**
   * The single key of an externally tagged enum value (`{"User": […]}`) and its content.
   *
   * @throws {FormatError} when it is not an object with exactly one of `variants`.
   */
  variant<K extends string>(variants: readonly K[]): { tag: K; content: Value } {
    const expected = `an object with one key: ${variants.join(", ")}`;
    if (typeof this.raw === "string" && (variants as readonly string[]).includes(this.raw)) this.fail(expected, `the bare string ${describeValue(this.raw)}`);
    this.object(expected);
    const keys = this.keys();
    if (keys.length !== 1) this.fail(expected, keys.length === 0 ? "an empty object" : `keys ${keys.map((k) => JSON.stringify(k)).join(", ")}`);
    const tag = keys[0]!;
    if (!(variants as readonly string[]).includes(tag)) this.fail(expected, `key ${JSON.stringify(tag)}`);
    return { tag: tag as K, content: this.field(tag) };
  }
}
