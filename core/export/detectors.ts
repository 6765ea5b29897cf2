/**
 * The redaction detectors: what each finds, in the order they run, and what each
 * deliberately keeps. The engine that runs them (`redactText`, `redactJson`,
 * `redactAcross`) is `redact.ts`.
 *
 * ## Detectors, in the order they run
 *
 * | name | what it finds | kept |
 * | --- | --- | --- |
 * | `private-key` | a PEM block `-----BEGIN … PRIVATE KEY-----` through its `-----END … PRIVATE KEY-----` (multi-line, also with literal `\n` escapes). An unterminated block is redacted up to the next `-----` or the end of the text (a truncated key still leaks key material). | nothing of the block |
 * | `url-credentials` | `scheme://user:password@host` | the scheme and `@host…` |
 * | `anthropic-api-key` | `sk-ant-…` (≥ 20 chars after the prefix) | — |
 * | `openai-api-key` | `sk-…`, `sk-proj-…`, `sk-svcacct-…`, `sk-admin-…` (≥ 20 chars of `[A-Za-z0-9_-]` with a letter and a digit; `sk-some-hyphenated-words` is prose) | — |
 * | `google-api-key` | `AIza…` (≥ 30 more chars) | — |
 * | `github-token` | `ghp_ gho_ ghu_ ghs_ ghr_` + ≥ 20 alphanumerics, `github_pat_…` | — |
 * | `slack-token` | `xoxb- xoxa- xoxp- xoxr- xoxs- xoxo-` and `xapp-` tokens, `hooks.slack.com/services/…` webhook paths | `https://` of a webhook |
 * | `stripe-key` | `sk_live_ rk_live_ sk_test_ rk_test_` + ≥ 10 alphanumerics | — |
 * | `service-token` | npm `npm_` + 36, GitLab `glpat-` + ≥ 20, Shopify `shpat_`/`shpca_`/`shppa_`/`shpss_` + 32 hex, Linear `lin_api_` + 40, SendGrid `SG.<22>.<43>`, Hugging Face `hf_` + ≥ 34 | — |
 * | `aws-access-key-id` | `AKIA…` / `ASIA…` + exactly 16 of `[A-Z0-9]` | — |
 * | `aws-secret-access-key` | a 40-char `[A-Za-z0-9/+=]` value after `aws_secret_access_key`, `AWS_SECRET_ACCESS_KEY`, `SecretAccessKey`, … and `=`/`:` | the key and separator |
 * | `jwt` | `eyJ<header>.<payload>.<signature>` (three or more base64url segments, the first starting `eyJ`) | — |
 * | `bearer-token` | `Bearer <token>` (any case) where the token is ≥ 8 chars and not an ordinary word | `Bearer ` |
 * | `auth-header` | `Authorization: [Basic\|Token\|…] <credential>` (not an ordinary lowercase word), `Cookie:` / `Set-Cookie:` values (to the end of the line) | the header name and scheme |
 * | `secret-assignment` | `key=value`, `key: value`, `"key": "value"`, `key => 'value'`, `--key=value` where the key ends with `password`, `passwd`, `passphrase`, `secret`, `token`, `api_key`/`apikey`/`api-key`, `access_key`, `secret_key`, `private_key`, `signing_key`, `encryption_key`, `master_key` or `credential(s)` (any case, camelCase too: `apiKey`, `clientSecret`, `GITHUB_TOKEN`), or with `pass`, `pwd` or `pw` as its own last word (`DB_PASS`, `MYSQL_PWD`, `smtp.pw`; not `compass`, `bypass`) | the key, separator and quotes |
 * | `keyed-hex-token` | a run of ≥ 16 hex digits (any case) after one of those key words or `key`/`auth`, directly or after `:`/`=` or up to two filler words (`token 3f2a…`, `the API key is 9C1E…`, `GITHUB_TOKEN 0f…`) | the words before it |
 * | `high-entropy` | any other run of ≥ 20 chars of `[A-Za-z0-9+/=_-]` (percent-escapes such as `%2F` included and decoded) that looks random (rules below) | a leading `name=` |
 *
 * A detector never matches inside an earlier placeholder, so `Bearer eyJ…` is reported once,
 * as `jwt`. The passes repeat until nothing more is found, so redacting twice equals redacting
 * once (idempotence), and every regular expression runs in linear time: each match starts
 * at the beginning of a character run (a look-behind), quoted values are bounded, and no
 * quantified group can match the same text two ways.
 *
 * ## Choices about false positives (what is deliberately kept)
 *
 * - **`secret-assignment`**: keys must *end* with a keyword, so `max_tokens: 4096`,
 *   `input_tokens`, `tokenizer`, `password_file`, `prompt_cache_key` and `sort_key` are kept.
 *   Values kept as they are: empty values, `null`/`true`/`false`/`none`/`nil`/`undefined`,
 *   placeholders and masks (`***`, `xxxx`, `…`), references (`$UPPER_CASE_VAR`, `${…}`,
 *   `$(…)`, `%s`, `%(name)s`, `{name}`, `{{…}}`, `{%…`), code (`getToken(…)`, `os.environ[…]`, Node's `env.X`,
 *   `import.meta.env.X`, `self.x`, `this.x`) and, after a `:` only, type names (`token: string`,
 *   `password: str`, `apiKey: Option<String>`). Anything else after the separator is redacted,
 *   numbers included (`password=1234`). Prose such as `Token: the smallest unit` loses the
 *   one word after the colon: accepted, a colon after a secret's name is too often a real value.
 *   A bare value ends at whitespace, a quote, a backslash, `&`, `,`, `;`, `<`, `>`, `(` or a
 *   backtick (what follows such a character in a password stays visible).
 * - **`high-entropy`** needs all of: ≥ 20 chars; an uppercase letter, a lowercase letter and a
 *   digit; Shannon entropy ≥ 3.5 bits/char; not three or more short `_`/`-`-separated pieces
 *   (`snake_case_v2_names`); and short "sub-words" — camelCase humps, digit runs and hex runs
 *   average < 2.5 chars (or < 3.5 for a token of ≥ 32 chars whose entropy is ≥ 4.6 bits/char).
 *   So ordinary words, `camelCaseIdentifiers`, `SCREAMING_SNAKE`, file paths
 *   (`src/utils/parseHTTP2Frame`) and version strings are kept, as are **lowercase hex
 *   digests and git SHAs** (no uppercase), **UUIDs and ULIDs** (no mix of cases) and
 *   **subresource-integrity hashes** (`sha256-…`/`sha384-…`/`sha512-…`, public by design).
 *   A run containing `/` is judged piece by piece (a path with one random-looking piece is
 *   redacted whole: a secret split by `/` leaks none of its pieces) and also whole, unless
 *   half its pieces are lowercase words (`src/utils/v1ToV6` is a path; standard-base64
 *   `Kw9/+lpU…` is not).
 *   Random-looking identifiers (`call_Ab3dEf9Gh…`, `chatcmpl-…`, bundle hashes, Google Docs
 *   ids, a few dense machine-generated names such as LLVM opcode names), base64 text inside
 *   a message (an inline `data:…;base64,` image included) and opaque provider replay blobs
 *   (encrypted reasoning, signatures) are redacted: they are unreadable anyway and base64
 *   can hide any secret. Tuned on ~175,000 distinct runs of real source and documentation
 *   (node_modules, Python's library, C headers): the runs it redacts there are base64,
 *   sample tokens and generated ids. Random base62 tokens are caught about 88% of the time
 *   at 20 chars, 94% at 24, 97% at 32, 99% at 40 and 99.9% from 48; the named detectors
 *   catch the formats they know regardless of length.
 *   A hex-only secret (e.g. a 64-hex API key) is caught only behind a secret-looking key
 *   (`secret-assignment`, `keyed-hex-token`): `commit 9fceb02…` and `sha256 e3b0…` stay.
 * - **`bearer-token` / `auth-header`**: `Bearer token`, `the bearer instrument` and
 *   `Authorization: required` are prose and kept (a single lowercase word, or a capitalized one).
 * - **`openai-api-key`** needs a letter and a digit after `sk-`, so `sk-learn-style-names`
 *   are kept.
 * - Not detected: secrets in an unknown format that are short (< 20 chars) or look like
 *   words and sit outside a `key=value` context (`hunter2` alone), a CLI flag with a space
 *   (`--password hunter2`), secrets split across JSON strings (an export joins the adjacent
 *   text parts of a message before it looks: `policy.ts`), and encoded text
 *   (percent-encoded `api_key%3D…`, HTML entities, base64 inside a message other than as a
 *   whole high-entropy run). Use the export's drop flags
 *   when the content itself must not leave.
 *
 * @module
 */
/**
 * The name of a detector, as it appears in `[REDACTED:<name>]` and in reports.
 *
 * @example
 * ```ts
 * const counts: Partial<Record<RedactionDetector, number>> = { jwt: 2 };
 * ```
 */
export type RedactionDetector =
  | "private-key"
  | "url-credentials"
  | "anthropic-api-key"
  | "openai-api-key"
  | "google-api-key"
  | "github-token"
  | "slack-token"
  | "stripe-key"
  | "service-token"
  | "aws-access-key-id"
  | "aws-secret-access-key"
  | "jwt"
  | "bearer-token"
  | "auth-header"
  | "secret-assignment"
  | "keyed-hex-token"
  | "high-entropy";

/**
 * One redaction: which detector replaced something. It never carries the secret itself.
 *
 * @example
 * ```ts
 * import { redactText } from "sessionfold";
 *
 * redactText("password=hunter2").findings; // [{ detector: "secret-assignment" }]
 * ```
 */
export interface RedactionFinding {
  readonly detector: RedactionDetector;
}

/**
 * A detector's name and a one-line description (for `--help`, docs and reports).
 *
 * @example
 * ```ts
 * const info: RedactionDetectorInfo = REDACTION_DETECTORS[0]!; // { name: "private-key", description: "PEM private key blocks …" }
 * ```
 */
export interface RedactionDetectorInfo {
  readonly name: RedactionDetector;
  readonly description: string;
}

/** The named groups of a detector's match. */
export type Groups = Record<string, string | undefined>;

/** One detector: its name, what it finds, its pattern and what it keeps. */
export interface Detector {
  readonly name: RedactionDetector;
  readonly description: string;
  /** Global, linear-time. Named groups: `keep` (kept before the secret), `secret` (replaced; see `runPass` for the others). */
  readonly pattern: RegExp;
  /** Returns false to keep a match as it is (a false positive). */
  readonly accept?: (secret: string, groups: Groups, after: string) => boolean;
}

/**
 * The replacement text for a detector: `[REDACTED:<name>]`.
 *
 * @example
 * ```ts
 * redactionPlaceholder("jwt"); // "[REDACTED:jwt]"
 * ```
 */
export function redactionPlaceholder(detector: RedactionDetector): string {
  return `[REDACTED:${detector}]`;
}

const PLACEHOLDER_PREFIX = "[REDACTED:";
const NOT_PLACEHOLDER = String.raw`(?!\[REDACTED:)`;
/** Keywords a secret's name ends with (see the module doc). */
const KEYWORDS = String
  .raw`(?:pass(?:word|wd|phrase)|(?<![A-Za-z0-9])(?:pass|pwd|pw)|secret|token|api[_-]?key|apikey|(?:access|secret|private|signing|encryption|master)[_-]?key|credentials?)`;
/** Words after which a hex token is a secret (`token 3f2a…`, `api key is 9c1e…`). */
const HEX_KEYWORDS = String.raw`(?:${KEYWORDS}|key|auth(?:orization)?)s?`;
const SECRET_KEY_NAME = new RegExp(String.raw`${KEYWORDS}$`, "i");
const EXTRA_SECRET_KEY_NAMES = /^(?:proxy-)?authorization$|^(?:set-)?cookie$/i;

/** Code, references, masks and literals that may follow a secret's name and are not secrets. */
export function isNonSecretValue(value: string, separator: string, after: string): boolean {
  if (value === "" || value.startsWith(PLACEHOLDER_PREFIX)) return true;
  if (/^(?:null|nil|none|true|false|undefined)$/i.test(value)) return true;
  if (/^(?:[*•…]+|x{3,}|\.{3,})$/i.test(value)) return true;
  if (/^(?:\$\{|\$\(|\{\{|\{%)|^(?:\$[A-Z_][A-Z0-9_]*|%(?:\(\w+\))?[sdr]|\{[\w. ]+\})$/.test(value)) return true;
  if (value === "%" && after.startsWith("(")) return true; // %(name)s: the bare value stops at "("
  const identifierChain = /^(?:[A-Za-z_$][\w$]*\.)*[A-Za-z_$][\w$]*\[?$/.test(value);
  if (identifierChain && (after.startsWith("(") || value.endsWith("["))) return true;
  if (/^(?:process\.env|import\.meta\.env|os\.environ|os\.getenv|Deno\.env|self|this)\b[.\[]?/.test(value) && identifierChain) return true;
  const annotation = separator.includes(":") && !separator.includes("=");
  // Code closes what it opened: `(token: TokenIdentity) =>`, `{apiKey: GEMINI_API_KEY}`.
  const bare = value.replace(/[)\]}>:,;]+$/, "");
  if (annotation && TYPE_NAMES.test(bare.replace(/[\[<].*$/, ""))) return true;
  // A type in code (`credentials: AwsCredentialIdentity | undefined`, `type A = ApiKeyCredential | OAuth`): a PascalCase name of letters where a type goes.
  const typeFollows = bare !== value || /^\s*[|&,;)>=<[\]}]/.test(after);
  if (/^[A-Z][A-Za-z]*[a-z][A-Za-z]*$/.test(bare) && /[A-Z].*[A-Z]/.test(bare) && typeFollows && (annotation || /^\s*[|&]/.test(after))) return true;
  // An object or array literal opened after the key (`token: { … }`), a keyword of code (`token = await …`), a secret's property (`apiKey: result.apiKey`).
  if (value === "{" || value === "[" || /^(?:await|new|async|function|require|import|typeof|yield|class)$/.test(bare)) return true;
  if (/^[a-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$/.test(bare) && isSecretKeyName(bare.slice(bare.lastIndexOf(".") + 1))) return true;
  // A constant's name (`apiKey: GEMINI_API_KEY`, "STRING_VALUE", `PASSWORD: "PASSWORD"`), a path to a key file, and fill-in examples (`your-api-key`, `sk-ant-...`).
  if (/^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/.test(bare) || (/^[A-Z_]+$/.test(bare) && SECRET_KEY_NAME.test(bare))) return true;
  if (/^(?:\/|~\/|\.\.?\/)[\w.\/-]+$/.test(bare) || /^[<\[]?(?:your|my)[-_ ]\w/i.test(value) || /(?:\.\.\.|…)$/.test(bare)) return true;
  return false;
}

const TYPE_NAMES =
  /^(?:string|str|number|int|integer|float|double|bool|boolean|bytes|any|unknown|object|optional|option|secretstr|secretbytes|required|char|text|varchar)$/i;

function hasLetterAndDigit(text: string): boolean {
  return /[A-Za-z]/.test(text) && /[0-9]/.test(text);
}

/** An ordinary word after `Bearer`/`Authorization:` (prose), not a credential. */
function isWord(text: string): boolean {
  return /^[A-Z]?[a-z]+$/.test(text);
}

/** Every detector, in the order they run (see the module doc). */
export const DETECTORS: readonly Detector[] = [
  {
    name: "private-key",
    description: "PEM private key blocks (-----BEGIN … PRIVATE KEY----- through END)",
    pattern: /(?<secret>-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----[^-]*(?:-(?!----)[^-]*)*(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)?)/g,
  },
  {
    name: "url-credentials",
    description: "user:password in URLs (scheme://user:password@host)",
    pattern: new RegExp(
      String.raw`(?<keep>(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,20}:\/\/)${NOT_PLACEHOLDER}(?<secret>[^\s\/:@"'<>\[\]]+:[^\s\/@"'<>]+)(?=@)`,
      "g",
    ),
  },
  {
    name: "anthropic-api-key",
    description: "Anthropic API keys (sk-ant-…)",
    pattern: /(?<![A-Za-z0-9_-])(?<secret>sk-ant-[A-Za-z0-9_-]{20,})/g,
  },
  {
    name: "openai-api-key",
    description: "OpenAI-style API keys (sk-…, sk-proj-…)",
    pattern: /(?<![A-Za-z0-9_-])(?<secret>sk-[A-Za-z0-9_-]{20,})/g,
    accept: (secret) => hasLetterAndDigit(secret.slice(3)),
  },
  {
    name: "google-api-key",
    description: "Google API keys (AIza…)",
    pattern: /(?<![A-Za-z0-9_-])(?<secret>AIza[A-Za-z0-9_-]{30,})/g,
  },
  {
    name: "github-token",
    description: "GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)",
    pattern: /(?<![A-Za-z0-9_])(?<secret>gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/g,
  },
  {
    name: "slack-token",
    description: "Slack tokens (xoxb-, xoxp-, xoxa-, xoxr-, xoxs-, xapp-) and webhook URLs",
    pattern: /(?<![A-Za-z0-9-])(?<secret>xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}|hooks\.slack\.com\/services\/[A-Za-z0-9_\/-]+)/g,
  },
  {
    name: "stripe-key",
    description: "Stripe secret and restricted keys (sk_live_, rk_live_, sk_test_, rk_test_)",
    pattern: /(?<![A-Za-z0-9_])(?<secret>[sr]k_(?:live|test)_[A-Za-z0-9]{10,})/g,
  },
  {
    name: "service-token",
    description:
      "other services' prefixed tokens: npm (npm_), GitLab (glpat-), Shopify (shpat_, shpca_, shppa_, shpss_), Linear (lin_api_), SendGrid (SG.…), Hugging Face (hf_)",
    pattern:
      /(?<![A-Za-z0-9_-])(?<secret>npm_[A-Za-z0-9]{36}|glpat-[A-Za-z0-9_-]{20,}|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}|lin_api_[A-Za-z0-9]{40}|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}|hf_[A-Za-z0-9]{34,})(?![A-Za-z0-9_-])/g,
  },
  {
    name: "aws-access-key-id",
    description: "AWS access key ids (AKIA…, ASIA…)",
    pattern: /(?<![A-Za-z0-9])(?<secret>(?:AKIA|ASIA)[A-Z0-9]{16})(?![A-Za-z0-9])/g,
  },
  {
    name: "aws-secret-access-key",
    description: "AWS secret access keys after aws_secret_access_key / SecretAccessKey",
    pattern: new RegExp(
      String
        .raw`(?<keep>(?<![A-Za-z0-9_.-])(?:aws[_-]?)?secret[_-]?access[_-]?key\\?["']?[ \t]*(?:=>|[:=])[ \t]*\\?["']?)${NOT_PLACEHOLDER}(?<secret>[A-Za-z0-9\/+=]{40})(?![A-Za-z0-9\/+=])`,
      "gi",
    ),
  },
  {
    name: "jwt",
    description: "JSON Web Tokens (eyJ….….…)",
    pattern: /(?<![A-Za-z0-9_-])(?<secret>eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+){0,2})/g,
  },
  {
    name: "bearer-token",
    description: "Bearer tokens (Authorization: Bearer …)",
    pattern: new RegExp(String.raw`(?<keep>(?<![A-Za-z0-9_-])bearer[ \t]+)${NOT_PLACEHOLDER}(?<secret>[A-Za-z0-9._~+\/=-]{8,})`, "gi"),
    accept: (secret) => !isWord(secret),
  },
  {
    name: "auth-header",
    description: "Authorization header credentials (Basic, Token, …) and Cookie / Set-Cookie values",
    pattern: new RegExp(
      String
        .raw`(?<![A-Za-z0-9_-])(?:(?<keep>(?:proxy-)?authorization\\?["']?[ \t]*[:=][ \t]*\\?["']?(?:(?:basic|token|digest|bot|apikey|negotiate|ntlm)[ \t]+)?)(?!bearer[ \t])${NOT_PLACEHOLDER}(?<credential>[^\s"'\\,;]{6,})|(?<ckeep>(?:set-)?cookie\\?["']?[ \t]*:[ \t]*\\?["']?)${NOT_PLACEHOLDER}(?<cookie>[^\s"'\\][^\r\n"'\\]*))`,
      "gi",
    ),
    accept: (_secret, groups) => groups.cookie !== undefined || !isWord(groups.credential ?? ""),
  },
  {
    name: "secret-assignment",
    description: 'password=…, token: …, "api_key": "…" and other values of secret-named keys',
    pattern: new RegExp(
      String.raw`(?<keep>(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]*?${KEYWORDS}(?![A-Za-z0-9_.-])\\?["']?\]?(?<sep>[ \t]*(?:===?|!==?|:=|=>|[:=])[ \t]*))` +
        String
          .raw`(?:(?<open>")${NOT_PLACEHOLDER}(?<dq>(?:[^"\\\n]|\\.){1,1024})(?<close>")|(?<eopen>\\")${NOT_PLACEHOLDER}(?<eq>(?:[^"\\\n]|\\[^"\n]){1,1024})(?<eclose>\\")|(?<sopen>')${NOT_PLACEHOLDER}(?<sq>(?:[^'\\\n]|\\.){1,1024})(?<sclose>')|(?<bopen>\\?["']?)${NOT_PLACEHOLDER}(?<bare>[^\s"'\\&,;<>(\x60=:][^\s"'\\&,;<>(\x60]*))`,
      "gi",
    ),
    accept: (_secret, groups, after) => {
      const value = groups.dq ?? groups.eq ?? groups.sq ?? groups.bare ?? "";
      return !isNonSecretValue(value, groups.sep ?? "", after);
    },
  },
  {
    name: "keyed-hex-token",
    description: "hex tokens (≥ 16 hex digits) within two words after token, key, secret, password, auth… (token 3f2a…, api key is 9c1e…)",
    pattern: new RegExp(
      String
        .raw`(?<keep>(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]*?${HEX_KEYWORDS}(?![A-Za-z0-9_.-])\\?["']?(?:[ \t]*(?:=>|:=|[:=])[ \t]*|[ \t]+(?:(?:is|was|of|for|value|id|=|:)[ \t]+){0,2})\\?["']?)${NOT_PLACEHOLDER}(?<secret>[0-9a-fA-F]{16,})(?![0-9A-Za-z_])`,
      "gi",
    ),
  },
  {
    name: "high-entropy",
    description: "other random-looking tokens (≥ 20 chars, mixed case and digits, ≥ 3.5 bits/char)",
    // A run may contain percent-escapes (`sig=abc%2Bdef%3D` in a signed URL); they are decoded to judge it.
    pattern: /(?<![A-Za-z0-9+\/=_-])(?=[A-Za-z0-9+\/=_%-]{20})(?<secret>(?:%[0-9A-Fa-f]{2})*[A-Za-z0-9+\/=_-]+(?:%[0-9A-Fa-f]{2}[A-Za-z0-9+\/=_-]*)*)/g,
  },
];

/**
 * Every detector, in the order it runs, with its description.
 *
 * @example
 * ```ts
 * for (const d of REDACTION_DETECTORS) console.log(`${d.name}: ${d.description}`);
 * ```
 */
export const REDACTION_DETECTORS: readonly RedactionDetectorInfo[] = DETECTORS.map(({ name, description }) => ({ name, description }));

/** Shannon entropy of `text` in bits per character. */
function shannonEntropy(text: string): number {
  const counts = new Map<string, number>();
  for (const ch of text) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let bits = 0;
  for (const count of counts.values()) {
    const p = count / text.length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

const SUBWORD = /[0-9a-f]{8,}(?![A-Za-z])|[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+/g;

/** The high-entropy rule for one `/`-free piece (see the module doc). */
function looksRandom(piece: string): boolean {
  if (piece.length < 20) return false;
  if (!/[A-Z]/.test(piece) || !/[a-z]/.test(piece) || !/[0-9]/.test(piece)) return false;
  const entropy = shannonEntropy(piece);
  if (entropy < 3.5) return false;
  // snake_case / kebab-case identifiers: three or more short pieces (random tokens rarely have two separators).
  const separated = piece.split(/[_-]/);
  if (separated.length >= 3 && (piece.length - separated.length + 1) / separated.length < 6) return false;
  let words = 0;
  let letters = 0;
  for (const match of piece.matchAll(SUBWORD)) {
    words += 1;
    letters += match[0].length;
  }
  if (words === 0) return false;
  const average = letters / words;
  // Short humps mean random; long tokens may have longer humps when their entropy is near the maximum.
  return average < 2.5 || (piece.length >= 32 && average < 3.5 && entropy >= 4.6);
}

/** For a high-entropy run: the length of a leading `name=` to keep, or -1 when the run is not a secret. */
export function highEntropyKeep(run: string): number {
  if (/^sha(?:1|256|384|512)-/i.test(run)) return -1;
  const named = /^[A-Za-z_][A-Za-z0-9_.-]{0,40}=(?!=)/.exec(run);
  const keep = named && !looksRandom(named[0]) ? named[0].length : 0;
  const value = run.slice(keep).replace(/%([0-9A-Fa-f]{2})/g, (_escape, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  if (value.length < 20) return -1;
  const pieces = value.split(/[^A-Za-z0-9+=_-]/);
  if (pieces.some(looksRandom)) return keep;
  // base64 with `/` (a signature): judged whole unless half its pieces are lowercase words (a path).
  const parts = pieces.filter((piece) => piece.length > 0);
  const words = parts.filter((piece) => /^[a-z][a-z0-9_-]*$/.test(piece)).length;
  return parts.length > 1 && words * 2 < parts.length && /^[A-Za-z0-9+\/=_-]+$/.test(value) && looksRandom(value) ? keep : -1;
}

/**
 * Whether an object key or a `key=value` name marks its value as a secret: it ends with
 * `password`, `secret`, `token`, `api_key`, `credentials`, … (see the module doc), or it is
 * `authorization`, `proxy-authorization`, `cookie` or `set-cookie`.
 *
 * @example
 * ```ts
 * isSecretKeyName("clientSecret"); // true
 * isSecretKeyName("max_tokens");   // false
 * ```
 */
export function isSecretKeyName(key: string): boolean {
  return SECRET_KEY_NAME.test(key) || EXTRA_SECRET_KEY_NAMES.test(key);
}
