/**
 * Secret redaction for exports: {@linkcode redactText} replaces credentials inside free
 * text with `[REDACTED:<detector>]` (or what a {@linkcode PlaceholderNamer} calls them) and
 * keeps everything else as it was, {@linkcode redactJson} does the same for every string
 * (and object key) of a JSON value, using key names as context (`{"password": "…"}`), and
 * {@linkcode redactAcross} for texts read as one. The detectors, what each finds and what it
 * deliberately keeps are in `detectors.ts`.
 *
 * A detector never matches inside an earlier placeholder. The passes repeat until nothing
 * more is found, so redacting twice equals redacting once, and every position is mapped back
 * to the original text, so a secret is always named by its own text.
 *
 * @module
 */
import { LimitExceededError } from "../errors.ts";
import { MAX_JSON_DEPTH } from "../schema/json-depth.ts";
import {
  type Detector,
  DETECTORS,
  type Groups,
  highEntropyKeep,
  isNonSecretValue,
  isSecretKeyName,
  type RedactionDetector,
  type RedactionFinding,
  redactionPlaceholder,
} from "./detectors.ts";

export {
  isSecretKeyName,
  REDACTION_DETECTORS,
  type RedactionDetector,
  type RedactionDetectorInfo,
  type RedactionFinding,
  redactionPlaceholder,
} from "./detectors.ts";

/**
 * What {@linkcode redactText} returns: the redacted text and one finding per replacement.
 *
 * @example
 * ```ts
 * const { text, findings }: RedactTextResult = redactText("token=abc123");
 * ```
 */
export interface RedactTextResult {
  readonly text: string;
  readonly findings: RedactionFinding[];
}

/**
 * What {@linkcode redactJson} returns: a new value (the input is untouched) and its findings.
 *
 * @example
 * ```ts
 * const { value, findings }: RedactJsonResult<{ password: string }> = redactJson({ password: "x" });
 * ```
 */
export interface RedactJsonResult<T = unknown> {
  readonly value: T;
  readonly findings: RedactionFinding[];
}

/** Where one detector's match is replaced: `[start, end)` of the text the pass ran on. */
interface Replacement {
  readonly start: number;
  readonly end: number;
  readonly detector: RedactionDetector;
}

/** The matches of one detector in `text`, in order, as the regions their secrets cover. */
function replacementsOf(detector: Detector, text: string): Replacement[] {
  const out: Replacement[] = [];
  text.replace(detector.pattern, (...args: unknown[]) => {
    const match = args[0] as string;
    const groups = args.at(-1) as Groups;
    const offset = args.at(-3) as number;
    const region = secretRegion(detector, match, groups, text.slice(offset + match.length, offset + match.length + 4));
    if (region) out.push({ start: offset + region[0], end: offset + region[1], detector: detector.name });
    return match;
  });
  return out;
}

/** The part of a match that is the secret, `[start, end)` within the match, or `undefined` to keep the match. */
function secretRegion(detector: Detector, match: string, groups: Groups, after: string): [number, number] | undefined {
  if (detector.name === "high-entropy") {
    const keep = highEntropyKeep(match);
    return keep < 0 ? undefined : [keep, match.length];
  }
  const secret = groups.secret ?? groups.credential ?? groups.cookie ?? groups.dq ?? groups.eq ?? groups.sq ?? groups.bare ?? match;
  if (detector.accept && !detector.accept(secret, groups, after)) return undefined;
  if (detector.name === "secret-assignment") {
    const open = groups.open ?? groups.eopen ?? groups.sopen ?? groups.bopen ?? "";
    const close = groups.close ?? groups.eclose ?? groups.sclose ?? "";
    return [(groups.keep ?? "").length + open.length, match.length - close.length];
  }
  if (detector.name === "slack-token" && secret.startsWith("hooks.")) return [SLACK_HOOK_PREFIX.length, match.length];
  const keep = (groups.keep ?? groups.ckeep ?? "").length;
  return [keep, keep + secret.length];
}

const SLACK_HOOK_PREFIX = "hooks.slack.com/services/";

/**
 * One replaced secret: where it was in the ORIGINAL text, which detector found it, and the
 * placeholder that stands for it in the output.
 *
 * @example
 * ```ts
 * const span: RedactionSpan = { start: 9, end: 16, detector: "secret-assignment", placeholder: "[REDACTED:secret-assignment]" };
 * ```
 */
export interface RedactionSpan {
  readonly start: number;
  readonly end: number;
  readonly detector: RedactionDetector;
  readonly placeholder: string;
}

/** The placeholder for a secret: `(detector, secret) => "[REDACTED:…]"`; the secret is the original text it replaces. */
export type PlaceholderNamer = (detector: RedactionDetector, secret: string) => string;

/** A placeholder in the text being redacted, with the original region it stands for. */
interface Mark extends RedactionSpan {
  /** Where it is in the current text, and its length there. */
  readonly at: number;
}

/**
 * Runs every detector once over `current` (which already holds the placeholders of `marks`)
 * and returns the new text and marks. Regions are mapped back to `original` through the
 * marks, so a secret is always named by its original text; a match that touches a
 * placeholder swallows it whole.
 */
function runPass(original: string, current: string, marks: Mark[], name: PlaceholderNamer): { text: string; marks: Mark[] } {
  for (const detector of DETECTORS) {
    const found = replacementsOf(detector, current);
    if (found.length === 0) continue;
    let text = "";
    const next: Mark[] = [];
    let cursor = 0;
    let j = 0;
    let shift = 0; // original offset minus current offset, before `cursor`
    for (const replacement of found) {
      let { start, end } = replacement;
      if (start < cursor) continue; // overlaps the previous replacement (cannot happen with these patterns)
      const moved = (mark: Mark) => next.push({ ...mark, at: text.length + (mark.at - cursor) });
      while (j < marks.length && marks[j]!.at + marks[j]!.placeholder.length <= start) {
        const mark = marks[j++]!;
        moved(mark);
        shift += mark.end - mark.start - mark.placeholder.length;
      }
      const inside = j < marks.length && marks[j]!.at < start ? marks[j] : undefined;
      if (inside) start = inside.at;
      const originalStart = inside ? inside.start : start + shift;
      let last: Mark | undefined;
      while (j < marks.length && marks[j]!.at < end) {
        last = marks[j++]!;
        shift += last.end - last.start - last.placeholder.length;
      }
      if (last && last.at + last.placeholder.length > end) end = last.at + last.placeholder.length;
      const originalEnd = last && last.at + last.placeholder.length === end ? last.end : end + shift;
      text += current.slice(cursor, start);
      const placeholder = name(replacement.detector, original.slice(originalStart, originalEnd));
      next.push({ start: originalStart, end: originalEnd, detector: replacement.detector, placeholder, at: text.length });
      text += placeholder;
      cursor = end;
    }
    for (; j < marks.length; j++) next.push({ ...marks[j]!, at: text.length + (marks[j]!.at - cursor) });
    text += current.slice(cursor);
    current = text;
    marks = next;
  }
  return { text: current, marks };
}

/** Passes after which a text that still changes is given up on (never reached in practice). */
const MAX_PASSES = 8;

/**
 * Every secret of `text` with where it was, and the redacted text: {@linkcode redactText}
 * with the positions, and with placeholders chosen by `name` (default
 * `[REDACTED:<detector>]`). Spans are in `text`'s own offsets, in order, never overlapping.
 *
 * @example
 * ```ts
 * const { text, spans } = findSecrets("password=hunter2 ok");
 * text;  // "password=[REDACTED:secret-assignment] ok"
 * spans; // [{ start: 9, end: 16, detector: "secret-assignment", placeholder: "[REDACTED:secret-assignment]" }]
 * ```
 */
export function findSecrets(text: string, name: PlaceholderNamer = redactionPlaceholder): { text: string; spans: RedactionSpan[] } {
  let current = text;
  let marks: Mark[] = [];
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const before = marks;
    ({ text: current, marks } = runPass(text, current, marks, name));
    if (marks === before) break;
  }
  return { text: current, spans: marks.map(({ start, end, detector, placeholder }) => ({ start, end, detector, placeholder })) };
}

/**
 * Replaces every secret the detectors find in `text` with `[REDACTED:<detector>]` and keeps
 * the rest as it was. Deterministic, linear in the length of `text`, idempotent
 * (`redactText(redactText(t).text).text === redactText(t).text`). The findings name the
 * detectors only, never the secrets.
 *
 * @example
 * ```ts
 * const { text, findings } = redactText("export OPENAI_API_KEY=sk-proj-4f9TqXb2LmN8vR1sK7wZ3yH6");
 * text;     // "export OPENAI_API_KEY=[REDACTED:openai-api-key]"
 * findings; // [{ detector: "openai-api-key" }]
 * ```
 */
export function redactText(text: string, name?: PlaceholderNamer): RedactTextResult {
  const { text: redacted, spans } = findSecrets(text, name);
  return { text: redacted, findings: spans.map((span) => ({ detector: span.detector })) };
}

function isWholePlaceholder(text: string): boolean {
  return /^\[REDACTED:[a-z-]+(?:#\d+)?\]$/.test(text);
}

function redactJsonInto(value: unknown, findings: RedactionFinding[], underSecretKey: boolean, depth: number, name: PlaceholderNamer): unknown {
  if (typeof value === "string") {
    if (underSecretKey && value !== "" && !isWholePlaceholder(value) && !isNonSecretValue(value, "=", "")) {
      findings.push({ detector: "secret-assignment" });
      return name("secret-assignment", value);
    }
    const result = redactText(value, name);
    for (const finding of result.findings) findings.push(finding);
    return result.text;
  }
  if (typeof value === "number" && underSecretKey && Number.isFinite(value)) {
    findings.push({ detector: "secret-assignment" });
    return name("secret-assignment", String(value));
  }
  if (value === null || typeof value !== "object") return value;
  if (depth >= MAX_JSON_DEPTH) {
    throw new LimitExceededError(`a JSON value nested deeper than ${MAX_JSON_DEPTH} levels (MAX_JSON_DEPTH) cannot be redacted`, {
      limit: "MAX_JSON_DEPTH",
      max: MAX_JSON_DEPTH,
      found: depth + 1,
    });
  }
  if (Array.isArray(value)) return value.map((item) => redactJsonInto(item, findings, underSecretKey, depth + 1, name));
  const entries: [string, unknown][] = [];
  const used = new Set<string>();
  for (const [key, item] of Object.entries(value)) {
    const keyResult = redactText(key, name);
    for (const finding of keyResult.findings) findings.push(finding);
    let unique = keyResult.text;
    for (let n = 2; used.has(unique); n++) unique = `${keyResult.text} (${n})`;
    used.add(unique);
    entries.push([unique, redactJsonInto(item, findings, underSecretKey || isSecretKeyName(key), depth + 1, name)]);
  }
  return Object.fromEntries(entries);
}

/**
 * Redacts every string inside a JSON value, object keys included, and returns a new value
 * (the input is not touched). A value under a secret-named key (see
 * {@linkcode isSecretKeyName}) is replaced whole, strings and numbers alike, so
 * `{"password": "hunter2"}` becomes `{"password": "[REDACTED:secret-assignment]"}` (or what
 * `name` calls it);
 * booleans and `null` stay. Two keys that redact to the same text are kept apart with a
 * ` (2)` suffix.
 *
 * @example
 * ```ts
 * const { value } = redactJson({ env: { GITHUB_TOKEN: "abc" }, note: "key AKIAIOSFODNN7EXAMPLE" });
 * // { env: { GITHUB_TOKEN: "[REDACTED:secret-assignment]" }, note: "key [REDACTED:aws-access-key-id]" }
 * ```
 * @throws {LimitExceededError} when the value is nested more than `MAX_JSON_DEPTH` (512) levels deep.
 */
export function redactJson<T>(value: T, name: PlaceholderNamer = redactionPlaceholder): RedactJsonResult<T> {
  const findings: RedactionFinding[] = [];
  const redacted = redactJsonInto(value, findings, false, 0, name) as T;
  return { value: redacted, findings };
}

/**
 * Redacts texts that are read as one (the adjacent text parts of a message, which a
 * streaming reply splits anywhere): the secrets are found in the joined text, and each text
 * loses what of a secret it holds. The text where a secret starts gets its placeholder; the
 * texts it runs on into lose their piece of it.
 *
 * @example
 * ```ts
 * redactAcross(["key: sk-proj-4f9TqXb2", "LmN8vR1sK7wZ3yH6 done"]).texts;
 * // ["key: [REDACTED:openai-api-key]", " done"]
 * ```
 */
export function redactAcross(texts: readonly string[], name: PlaceholderNamer = redactionPlaceholder): { texts: string[]; findings: RedactionFinding[] } {
  const joined = texts.join("");
  const { spans } = findSecrets(joined, name);
  const out: string[] = [];
  let start = 0;
  let first = 0; // the first span that may still reach into this text
  for (const text of texts) {
    const end = start + text.length;
    while (first < spans.length && spans[first]!.end <= start) first += 1;
    let piece = "";
    let cursor = start;
    for (let i = first; i < spans.length && spans[i]!.start < end; i++) {
      const span = spans[i]!;
      piece += joined.slice(cursor, Math.max(cursor, span.start));
      if (span.start >= start) piece += span.placeholder;
      cursor = Math.min(span.end, end);
    }
    out.push(piece + joined.slice(cursor, end));
    start = end;
  }
  return { texts: out, findings: spans.map((span) => ({ detector: span.detector })) };
}
