/**
 * Planted secrets for the export-safety tests: every kind the redactor knows, each one
 * different (a seeded generator), with the parts that must never leave an export. Secrets
 * are generated at run time so no credential-looking literal sits in the repository.
 * Not a test file itself.
 */
import { prng } from "../support/prng.ts";

export const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
export const LOWER = "abcdefghijklmnopqrstuvwxyz";
export const DIGITS = "0123456789";
export const ALNUM = UPPER + LOWER + DIGITS;
export const BASE64 = ALNUM + "+/";
export const BASE64URL = ALNUM + "-_";

/** Random strings drawn from an alphabet, with each of upper, lower and digit present when the alphabet has them. */
export class SecretFactory {
  readonly #next: () => number;
  constructor(seed: number) {
    this.#next = prng(seed);
  }

  pick(alphabet: string, length: number): string {
    for (;;) {
      let out = "";
      for (let i = 0; i < length; i++) out += alphabet[Math.floor(this.#next() * alphabet.length)];
      const needs = [UPPER, LOWER, DIGITS].filter((set) => [...set].some((ch) => alphabet.includes(ch)));
      if (needs.every((set) => [...out].some((ch) => set.includes(ch)))) return out;
    }
  }
}

/** One planted secret: the text put into a field, and the sensitive parts that must not leave. */
export interface Planted {
  readonly kind: string;
  readonly text: string;
  readonly secrets: readonly string[];
}

function base64Url(text: string): string {
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** One secret of every kind, all different from any other call's (`seed` picks them). */
export function plantAll(seed: number): Planted[] {
  const f = new SecretFactory(seed);
  const openai = `sk-proj-${f.pick(BASE64URL, 64)}`;
  const openaiLegacy = `sk-${f.pick(ALNUM, 48)}`;
  const anthropic = `sk-ant-api03-${f.pick(BASE64URL, 93)}AA`;
  const google = `AIza${f.pick(BASE64URL, 35)}`;
  const ghp = `ghp_${f.pick(ALNUM, 36)}`;
  const ghs = `ghs_${f.pick(ALNUM, 36)}`;
  const githubPat = `github_pat_${f.pick(ALNUM, 22)}_${f.pick(ALNUM, 59)}`;
  const slack = `xoxb-${f.pick(DIGITS, 12)}-${f.pick(DIGITS, 13)}-${f.pick(ALNUM, 24)}`;
  const slackHook = `T${f.pick(UPPER + DIGITS, 10)}/B${f.pick(UPPER + DIGITS, 10)}/${f.pick(ALNUM, 24)}`;
  const stripe = `sk_live_${f.pick(ALNUM, 32)}`;
  const awsId = `AKIA${f.pick(UPPER + DIGITS, 16)}`;
  const awsSecret = f.pick(BASE64, 40);
  const bearer = f.pick(ALNUM + "._-", 40);
  const pemLines = Array.from({ length: 5 }, () => f.pick(BASE64, 64));
  const jwtHeader = base64Url(JSON.stringify({ alg: "HS256", typ: "JWT", kid: f.pick(ALNUM, 12) }));
  const jwtPayload = base64Url(JSON.stringify({ sub: f.pick(ALNUM, 16), iat: 1700000000 }));
  const jwtSignature = f.pick(BASE64URL, 43);
  const jwt = `${jwtHeader}.${jwtPayload}.${jwtSignature}`;
  const password = f.pick(ALNUM + "!@#^*_+=.~", 18);
  const jsonSecret = `correct horse ${f.pick(ALNUM, 14)}`;
  const accessToken = f.pick(ALNUM, 30);
  const dbPassword = f.pick(ALNUM + "!*_~", 20);
  const highEntropy = f.pick(ALNUM, 48);
  const cookie = f.pick(ALNUM, 32);
  const basicAuth = btoa(`user:${f.pick(ALNUM, 20)}`);
  const yamlPassword = f.pick(ALNUM, 16);
  const hexToken = f.pick("0123456789abcdef", 40);
  const npm = `npm_${f.pick(ALNUM, 36)}`;
  const shopify = `shpat_${f.pick("0123456789abcdef", 32)}`;
  const dbPass = f.pick(ALNUM + "!*_~", 18);
  return [
    { kind: "openai-project", text: `OPENAI_KEY ${openai}`, secrets: [openai] },
    { kind: "openai-legacy", text: `key is ${openaiLegacy}.`, secrets: [openaiLegacy] },
    { kind: "anthropic", text: `anthropic ${anthropic}`, secrets: [anthropic] },
    { kind: "google", text: `maps key=${google}`, secrets: [google] },
    { kind: "github-ghp", text: `git remote token ${ghp}`, secrets: [ghp] },
    { kind: "github-ghs", text: `(${ghs})`, secrets: [ghs] },
    { kind: "github-pat", text: `PAT: ${githubPat}`, secrets: [githubPat] },
    { kind: "slack", text: `slack bot ${slack}`, secrets: [slack] },
    { kind: "slack-webhook", text: `post to https://hooks.slack.com/services/${slackHook}`, secrets: [slackHook] },
    { kind: "stripe", text: `stripe ${stripe}`, secrets: [stripe] },
    { kind: "aws-access-key-id", text: `aws id ${awsId}`, secrets: [awsId] },
    { kind: "aws-secret", text: `aws_secret_access_key = ${awsSecret}`, secrets: [awsSecret] },
    { kind: "bearer", text: `curl -H "Authorization: Bearer ${bearer}" https://api.example.com`, secrets: [bearer] },
    {
      kind: "private-key",
      text: `-----BEGIN RSA PRIVATE KEY-----\n${pemLines.join("\n")}\n-----END RSA PRIVATE KEY-----`,
      secrets: pemLines,
    },
    { kind: "jwt", text: `id_token ${jwt} end`, secrets: [jwtPayload, jwtSignature, jwtHeader.slice(-16)] },
    { kind: "password-pair", text: `login with password=${password} please`, secrets: [password] },
    { kind: "json-pair", text: `{"api_key": "${jsonSecret}", "x": 1}`, secrets: [jsonSecret] },
    { kind: "url-token", text: `https://example.com/cb?access_token=${accessToken}&state=1`, secrets: [accessToken] },
    { kind: "url-credentials", text: `postgres://admin:${dbPassword}@db.internal:5432/app`, secrets: [dbPassword] },
    { kind: "high-entropy", text: `opaque ${highEntropy} value`, secrets: [highEntropy] },
    { kind: "cookie", text: `Cookie: sessionid=${cookie}; theme=dark`, secrets: [cookie] },
    { kind: "basic-auth", text: `Authorization: Basic ${basicAuth}`, secrets: [basicAuth] },
    { kind: "yaml-password", text: `db:\n  passwd: ${yamlPassword}\n`, secrets: [yamlPassword] },
    { kind: "keyed-hex", text: `the deploy token is ${hexToken} (rotate it)`, secrets: [hexToken] },
    { kind: "db-pass", text: `DB_PASS=${dbPass} ./migrate`, secrets: [dbPass] },
    { kind: "npm-token", text: `//registry.example/:_authToken ${npm}`, secrets: [npm] },
    { kind: "shopify-token", text: `shopify admin ${shopify}`, secrets: [shopify] },
  ];
}

/** All planted texts of `plantAll(seed)` as one readable block of prose. */
export function plantedText(seed: number): { text: string; secrets: string[] } {
  const all = plantAll(seed);
  return {
    text: all.map((p) => `Note about ${p.kind}: ${p.text}`).join("\n"),
    secrets: all.flatMap((p) => p.secrets),
  };
}

/** Minimum length of a leaked substring the audit looks for. */
export const LEAK_WINDOW = 12;

/**
 * Every `LEAK_WINDOW`-char substring of the secrets found in `haystacks`, as
 * `{label, window}` (empty when nothing leaked): the first window of each secret that leaked,
 * counting only windows that belong to one secret. Linear in the haystacks' length.
 */
export function findLeaks(haystacks: readonly string[], secrets: readonly { label: string; value: string }[]): { label: string; window: string }[] {
  // A window that two secrets share (a fixed prefix such as "sk-ant-api03", JSON structure
  // inside a base64 JWT) says nothing about which secret leaked, and is not secret: ignored.
  const windows = new Map<string, string | null>();
  for (const { label, value } of secrets) {
    for (let i = 0; i + LEAK_WINDOW <= value.length; i++) {
      const window = value.slice(i, i + LEAK_WINDOW);
      const seen = windows.get(window);
      windows.set(window, seen === undefined || seen === label ? label : null);
    }
  }
  const leaks = new Map<string, string>();
  for (const hay of haystacks) {
    for (let i = 0; i + LEAK_WINDOW <= hay.length; i++) {
      const window = hay.slice(i, i + LEAK_WINDOW);
      const label = windows.get(window);
      if (label !== undefined && label !== null && !leaks.has(label)) leaks.set(label, window);
    }
  }
  return [...leaks].map(([label, window]) => ({ label, window }));
}
