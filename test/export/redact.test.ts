/**
 * The redactor, detector by detector: what each one replaces (positive examples), what it
 * deliberately keeps (negative examples: prose, code, paths, UUIDs, git SHAs, identifiers,
 * SRI hashes), idempotence, linear time on adversarial inputs, and JSON redaction.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LimitExceededError, MAX_JSON_DEPTH } from "../../core/mod.ts";
import { isSecretKeyName, REDACTION_DETECTORS, type RedactionDetector, redactionPlaceholder, redactJson, redactText } from "../../core/export/mod.ts";
import { ALNUM, BASE64, BASE64URL, DIGITS, plantAll, SecretFactory, UPPER } from "./secrets.ts";

const f = new SecretFactory(20261202);

function detectors(text: string): RedactionDetector[] {
  return redactText(text).findings.map((finding) => finding.detector);
}

interface Positive {
  detector: RedactionDetector;
  input: string;
  secret: string;
  expected?: string;
}

const openaiProject = `sk-proj-${f.pick(BASE64URL, 80)}`;
const openaiLegacy = `sk-${f.pick(ALNUM, 48)}`;
const anthropic = `sk-ant-api03-${f.pick(BASE64URL, 93)}AA`;
const google = `AIza${f.pick(BASE64URL, 35)}`;
const ghTokens = ["ghp", "gho", "ghu", "ghs", "ghr"].map((prefix) => `${prefix}_${f.pick(ALNUM, 36)}`);
const githubPat = `github_pat_${f.pick(ALNUM, 22)}_${f.pick(ALNUM, 59)}`;
const slackTokens = ["xoxb", "xoxa", "xoxp", "xoxr", "xoxs"].map((p) => `${p}-${f.pick(DIGITS, 12)}-${f.pick(DIGITS, 12)}-${f.pick(ALNUM, 24)}`);
const stripeKeys = ["sk_live_", "rk_live_", "sk_test_"].map((p) => p + f.pick(ALNUM, 24));
const awsId = `AKIA${f.pick(UPPER + DIGITS, 16)}`;
const awsSession = `ASIA${f.pick(UPPER + DIGITS, 16)}`;
const awsSecret = f.pick(BASE64, 40);
const bearer = f.pick(ALNUM + "._-", 32);
const pemBody = Array.from({ length: 4 }, () => f.pick(BASE64, 64)).join("\n");
const jwt = `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI${f.pick(BASE64URL, 20)}.${f.pick(BASE64URL, 43)}`;
const random40 = f.pick(ALNUM, 40);

const positives: Positive[] = [
  { detector: "openai-api-key", input: `OPENAI_API_KEY is ${openaiProject}`, secret: openaiProject, expected: "OPENAI_API_KEY is [REDACTED:openai-api-key]" },
  { detector: "openai-api-key", input: `key: "${openaiLegacy}"`, secret: openaiLegacy },
  { detector: "anthropic-api-key", input: `x-api-key ${anthropic} sent`, secret: anthropic, expected: "x-api-key [REDACTED:anthropic-api-key] sent" },
  { detector: "google-api-key", input: `https://maps.googleapis.com/maps/api/js?libraries=places&callback=x&k=${google}`, secret: google },
  ...ghTokens.map((t): Positive => ({ detector: "github-token", input: `git push https://github.com ${t}`, secret: t })),
  { detector: "github-token", input: `GH ${githubPat}.`, secret: githubPat, expected: "GH [REDACTED:github-token]." },
  ...slackTokens.map((t): Positive => ({ detector: "slack-token", input: `slack ${t}`, secret: t })),
  {
    detector: "slack-token",
    input: "hook https://hooks.slack.com/services/T0ABCDEF1/B0ABCDEF2/abcdefghijklmnopqrstuvwx",
    secret: "T0ABCDEF1/B0ABCDEF2/abcdefghijklmnopqrstuvwx",
    expected: "hook https://hooks.slack.com/services/[REDACTED:slack-token]",
  },
  ...stripeKeys.map((t): Positive => ({ detector: "stripe-key", input: `Stripe.apiKey = ${t};`, secret: t })),
  { detector: "aws-access-key-id", input: `aws_access_key_id=${awsId}`, secret: awsId, expected: "aws_access_key_id=[REDACTED:aws-access-key-id]" },
  { detector: "aws-access-key-id", input: `"AccessKeyId": "${awsSession}"`, secret: awsSession },
  {
    detector: "aws-secret-access-key",
    input: `[default]\naws_secret_access_key = ${awsSecret}\n`,
    secret: awsSecret,
    expected: "[default]\naws_secret_access_key = [REDACTED:aws-secret-access-key]\n",
  },
  {
    detector: "aws-secret-access-key",
    input: `{"SecretAccessKey": "${awsSecret}"}`,
    secret: awsSecret,
    expected: '{"SecretAccessKey": "[REDACTED:aws-secret-access-key]"}',
  },
  { detector: "aws-secret-access-key", input: `export AWS_SECRET_ACCESS_KEY=${awsSecret}`, secret: awsSecret },
  {
    detector: "bearer-token",
    input: `curl -H "Authorization: Bearer ${bearer}" https://api.example.com`,
    secret: bearer,
    expected: 'curl -H "Authorization: Bearer [REDACTED:bearer-token]" https://api.example.com',
  },
  { detector: "bearer-token", input: `headers = {"authorization": "bearer ${bearer}"}`, secret: bearer },
  {
    detector: "private-key",
    input: `key:\n-----BEGIN RSA PRIVATE KEY-----\n${pemBody}\n-----END RSA PRIVATE KEY-----\nafter`,
    secret: pemBody,
    expected: "key:\n[REDACTED:private-key]\nafter",
  },
  {
    detector: "private-key",
    input: `{"private_key": "-----BEGIN PRIVATE KEY-----\\n${pemBody.replace(/\n/g, "\\n")}\\n-----END PRIVATE KEY-----\\n"}`,
    secret: pemBody.split("\n")[0]!,
  },
  { detector: "private-key", input: `-----BEGIN OPENSSH PRIVATE KEY-----\n${pemBody}\n[output truncated]`, secret: pemBody },
  { detector: "jwt", input: `token ${jwt} expires`, secret: jwt, expected: "token [REDACTED:jwt] expires" },
  { detector: "jwt", input: `Authorization: Bearer ${jwt}`, secret: jwt, expected: "Authorization: Bearer [REDACTED:jwt]" },
  {
    detector: "auth-header",
    input: "Authorization: Basic dXNlcjpodW50ZXIy",
    secret: "dXNlcjpodW50ZXIy",
    expected: "Authorization: Basic [REDACTED:auth-header]",
  },
  { detector: "auth-header", input: `Authorization: token ${f.pick(ALNUM, 20)}`, secret: "" },
  {
    detector: "auth-header",
    input: "Cookie: session=abc123def; theme=dark\nHost: x",
    secret: "session=abc123def",
    expected: "Cookie: [REDACTED:auth-header]\nHost: x",
  },
  { detector: "secret-assignment", input: "password=hunter2", secret: "hunter2", expected: "password=[REDACTED:secret-assignment]" },
  { detector: "secret-assignment", input: "db passwd: hunter2!", secret: "hunter2!", expected: "db passwd: [REDACTED:secret-assignment]" },
  { detector: "secret-assignment", input: "client_secret = 'tiger tiger'", secret: "tiger tiger", expected: "client_secret = '[REDACTED:secret-assignment]'" },
  { detector: "secret-assignment", input: '{"password": "pa\\"ss word"}', secret: 'pa\\"ss word', expected: '{"password": "[REDACTED:secret-assignment]"}' },
  { detector: "secret-assignment", input: '{\\"apiKey\\": \\"hunter2\\"}', secret: "hunter2", expected: '{\\"apiKey\\": \\"[REDACTED:secret-assignment]\\"}' },
  { detector: "secret-assignment", input: "GITHUB_TOKEN=abc123 npm test", secret: "abc123", expected: "GITHUB_TOKEN=[REDACTED:secret-assignment] npm test" },
  {
    detector: "secret-assignment",
    input: "https://x.test/cb?access_token=abc.def&state=1",
    secret: "abc.def",
    expected: "https://x.test/cb?access_token=[REDACTED:secret-assignment]&state=1",
  },
  { detector: "secret-assignment", input: "mysql --password=hunter2 db", secret: "hunter2", expected: "mysql --password=[REDACTED:secret-assignment] db" },
  { detector: "secret-assignment", input: "pin: password=1234", secret: "1234" },
  { detector: "secret-assignment", input: "$config['db_secret'] => 'hunter2';", secret: "hunter2" },
  { detector: "secret-assignment", input: 'if password == "hunter2":', secret: "hunter2" },
  { detector: "secret-assignment", input: "SIGNING_KEY=s3cr3t-value", secret: "s3cr3t-value" },
  { detector: "secret-assignment", input: "password=$up3rS3cret", secret: "$up3rS3cret", expected: "password=[REDACTED:secret-assignment]" },
  { detector: "secret-assignment", input: "password=%40dm1n", secret: "%40dm1n", expected: "password=[REDACTED:secret-assignment]" },
  { detector: "secret-assignment", input: "DB_PASS=hunter2x psql", secret: "hunter2x", expected: "DB_PASS=[REDACTED:secret-assignment] psql" },
  {
    detector: "secret-assignment",
    input: "export MYSQL_PWD='s3cret value'",
    secret: "s3cret value",
    expected: "export MYSQL_PWD='[REDACTED:secret-assignment]'",
  },
  { detector: "secret-assignment", input: "smtp.pw: hunter2", secret: "hunter2", expected: "smtp.pw: [REDACTED:secret-assignment]" },
  { detector: "secret-assignment", input: "JWT_SECRET=x9y8z7w6", secret: "x9y8z7w6", expected: "JWT_SECRET=[REDACTED:secret-assignment]" },
  { detector: "secret-assignment", input: "password=abc.DEF_ghi9 please", secret: "abc.DEF_ghi9", expected: "password=[REDACTED:secret-assignment] please" },
  { detector: "secret-assignment", input: "token: Hunter2Secret\n", secret: "Hunter2Secret" },
  { detector: "service-token", input: `//registry.npmjs.org/:_authToken=npm_${f.pick(ALNUM, 36)}`, secret: "npm_" },
  { detector: "service-token", input: `GITLAB glpat-${f.pick(ALNUM, 20)} ok`, secret: "glpat-" },
  { detector: "service-token", input: `SG.${f.pick(ALNUM, 22)}.${f.pick(ALNUM, 43)}`, secret: "SG." },
  {
    detector: "keyed-hex-token",
    input: "token 3f2a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a end",
    secret: "3f2a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a",
    expected: "token [REDACTED:keyed-hex-token] end",
  },
  {
    detector: "keyed-hex-token",
    input: "the API key is 0123456789ABCDEF0123456789ABCDEF.",
    secret: "0123456789ABCDEF0123456789ABCDEF",
    expected: "the API key is [REDACTED:keyed-hex-token].",
  },
  { detector: "keyed-hex-token", input: "api key: 9c1e5b7a3d2f4e6c8b0a9d8e7f6a5b4c", secret: "9c1e5b7a3d2f4e6c8b0a9d8e7f6a5b4c" },
  {
    detector: "url-credentials",
    input: "DATABASE_URL=postgres://admin:hunter2@db.internal:5432/app",
    secret: "admin:hunter2",
    expected: "DATABASE_URL=postgres://[REDACTED:url-credentials]@db.internal:5432/app",
  },
  { detector: "url-credentials", input: "git clone https://x-access-token:abc123@github.com/o/r.git", secret: "abc123" },
  { detector: "high-entropy", input: `opaque ${random40} value`, secret: random40, expected: "opaque [REDACTED:high-entropy] value" },
  {
    detector: "high-entropy",
    input: `https://x.test/reset?code=${random40}&y=1`,
    secret: random40,
    expected: "https://x.test/reset?code=[REDACTED:high-entropy]&y=1",
  },
  { detector: "high-entropy", input: `blob ${f.pick(BASE64, 30)}/${f.pick(BASE64, 30)}== end`, secret: "" },
  {
    detector: "high-entropy",
    input: `https://bucket.example.com/o?sig=${encodeURIComponent(awsSecret)}&se=2026-12-02`,
    secret: encodeURIComponent(awsSecret).slice(0, 12),
    expected: "https://bucket.example.com/o?sig=[REDACTED:high-entropy]&se=2026-12-02",
  },
];

describe("redactText: detectors (positive examples)", () => {
  it.each(positives.map((p, i) => [i, p.detector, p] as const))("#%i %s", (_i, detector, p) => {
    const { text, findings } = redactText(p.input);
    expect(findings.map((x) => x.detector)).toContain(detector);
    expect(text).toContain(redactionPlaceholder(detector));
    if (p.secret.length >= 4) expect(text).not.toContain(p.secret);
    if (p.expected !== undefined) expect(text).toBe(p.expected);
  });

  it("has a positive example for every detector", () => {
    const covered = new Set(positives.map((p) => p.detector));
    expect([...covered].sort()).toEqual(REDACTION_DETECTORS.map((d) => d.name).sort());
  });

  it("documents every detector once, with a description", () => {
    const names = REDACTION_DETECTORS.map((d) => d.name);
    expect(new Set(names).size).toBe(names.length);
    for (const d of REDACTION_DETECTORS) expect(d.description.length).toBeGreaterThan(10);
  });

  it("names the more specific detector when two could match (Bearer <jwt>, password=<sk-key>)", () => {
    expect(detectors(`Authorization: Bearer ${jwt}`)).toEqual(["jwt"]);
    expect(detectors(`password=${openaiLegacy}`)).toEqual(["openai-api-key"]);
    expect(redactText(`password=${openaiLegacy}`).text).toBe("password=[REDACTED:openai-api-key]");
    expect(detectors(`https://user:${ghTokens[0]}@github.com`)).toEqual(["url-credentials"]);
  });

  it("redacts every occurrence and several kinds in one text", () => {
    const text = `a ${awsId} b ${awsId} c password=x1 d ${ghTokens[1]}`;
    const result = redactText(text);
    expect(result.text).toBe("a [REDACTED:aws-access-key-id] b [REDACTED:aws-access-key-id] c password=[REDACTED:secret-assignment] d [REDACTED:github-token]");
    expect(result.findings).toHaveLength(4);
  });

  it("finds every planted secret of the audit's generator", () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      for (const planted of plantAll(seed)) {
        const out = redactText(planted.text).text;
        for (const secret of planted.secrets) expect(out, planted.kind).not.toContain(secret.slice(0, 12));
      }
    }
  });
});

const negatives: [string, string][] = [
  ["prose", "The quick brown fox jumps over the lazy dog. Authentication and authorization are different things; a token is the smallest unit a model reads."],
  ["markdown", "## Secrets\n\n- **Token**: a unit of text\n- *Password*: use a manager\n"],
  ["bearer prose", "the bearer instrument; Bearer token; Authorization: required; Authorization: Bearer <token>"],
  ["camelCase identifiers", "convertUtf8ToUtf16LE getUserAccountById2FA parseHTTP2FrameHeader Uint8ArrayFromBase64 useEffectCleanup"],
  ["SCREAMING_SNAKE", "MAX_CONCURRENT_REQUESTS_PER_HOST_V2 SMB_POSIX_ACL_GROUP_OBJ"],
  ["unix paths", "/usr/local/lib/node_modules/typescript/lib/tsc.js /home/alice/projects/my-app/src/components/Button2/Button2Props.tsx"],
  ["windows paths", "C:\\Users\\Alice\\AppData\\Local\\Programs\\Microsoft VS Code\\Code.exe"],
  ["uuids", "550e8400-e29b-41d4-a716-446655440000 and 6BA7B810-9DAD-11D1-80B4-00C04FD430C8"],
  ["ulid", "01ARZ3NDEKTSV4RRFFQ69G5FAV"],
  ["git SHAs", "commit 9fceb02d0ae598e95dc970b74767f19372d61af8\nMerge: 1a2b3c4 5d6e7f8"],
  ["sha256 digest", "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"],
  ["SRI hash", "integrity: sha512-Q3awXrwOfEV+qc3WmO5ONyE0yO7Q1gQ9/oyHxGLZ/pl7N3NO/ZztqQwKLuwMkV+CA1JYSIeO3gkHnRDIo4AVaA=="],
  ["token counts", 'max_tokens: 4096, "input_tokens": 900, output_tokens=120, tokenizer=cl100k_base, num_tokens: 12'],
  ["type annotations", "function login(password: str, token: Optional[str]) -> None:\ninterface Creds { password: string; apiKey: string }"],
  ["code", 'const token = getToken();\napiKey = process.env.OPENAI_API_KEY\npassword = os.environ["DB_PASSWORD"]\nsecret = self.secret\n'],
  ["references", "password=${DB_PASSWORD} token=$TOKEN api_key=%(key)s secret={secret} client_secret={{ secret }}"],
  ["masks and literals", 'password=*** token=null secret: true api_key="" password: xxxxx'],
  ["non-secret keys", "password_file=/run/secrets/db sort_key=created_at prompt_cache_key=abc cache_key=v1 secrets: 3"],
  ["urls without credentials", "https://github.com/octo-org/octo-repo/blob/main/src/index.ts https://user@example.com/x"],
  ["versions and timestamps", "node v20.19.0, typescript@7.0.2, 2026-12-02T13:00:00.000Z, 1.0.0-beta.12"],
  ["sk- prose", "task-runner sk-learn-style-hyphenated-naming-convention ask-for-permission-before-running"],
  ["emails", "alice.smith+newsletter@example.com"],
  ["url-encoded prose", "https://www.google.com/search?q=how%20to%20rotate%20an%20API%20key%20in%202026&hl=en"],
  ["short base64", "aGVsbG8= dGVzdA=="],
  ["placeholder", "[REDACTED:openai-api-key] and password=[REDACTED:secret-assignment]"],
  ["words ending in pass", "compass=north bypass=yes surpass: 3 overpass=closed passport=x"],
  [
    "hex after other words",
    "commit 3f2a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a sha1 3f2a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a checksum 0123456789abcdef0123 tokenizer 0123456789abcdef0123",
  ],
  ["short hex after a key word", "key 0123456789abcde token deadbeef"],
  [
    "types and code after a secret's name",
    "setCredentials(credentials: AwsCredentialIdentity | undefined): void\ntype AuthCredential = ApiKeyCredential | OAuthCredential\nvalidate: (token: TokenIdentity) => boolean\nconst token = await provider();\nnew Client({ apiKey: result.apiKey });\nconst cfg = { token: { value: 1 } }",
  ],
  [
    "constants, paths and fill-in examples",
    'apiKey: GEMINI_API_KEY, nextToken: "STRING_VALUE", PASSWORD: "PASSWORD"\nGOOGLE_APPLICATION_CREDENTIALS=/path/to/service-account.json\nexport ANTHROPIC_API_KEY=sk-ant-...\napi_key: your-api-key token=<your_token_here>',
  ],
];

describe("redactText: what it keeps (negative examples)", () => {
  it.each(negatives)("%s", (_name, input) => {
    const result = redactText(input);
    expect(result.text).toBe(input);
    expect(result.findings).toEqual([]);
  });

  it("keeps an empty string and whitespace", () => {
    expect(redactText("")).toEqual({ text: "", findings: [] });
    expect(redactText(" \n\t ")).toEqual({ text: " \n\t ", findings: [] });
  });

  it("redacts base64 blobs inside text (documented: unreadable and able to hide secrets)", () => {
    const blob = f.pick(BASE64, 400);
    expect(redactText(`data:image/png;base64,${blob}`).text).toBe("data:image/png;base64,[REDACTED:high-entropy]");
  });

  it("keeps hex-only secrets outside a key=value context (documented limitation)", () => {
    const hex = "a3f1c9e07b2d4e5f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f";
    expect(redactText(`value ${hex}`).text).toBe(`value ${hex}`);
    expect(redactText(`api_key=${hex}`).text).toBe("api_key=[REDACTED:secret-assignment]");
  });

  it("keeps prose after a secret's name when it is a type, and redacts a value otherwise", () => {
    expect(redactText("token: string").text).toBe("token: string");
    expect(redactText("token: hunter2").text).toBe("token: [REDACTED:secret-assignment]");
  });
});

describe("redactText: idempotence", () => {
  const samples = [...positives.map((p) => p.input), ...negatives.map(([, n]) => n), ...plantAll(7).map((p) => p.text)];

  it.each(samples.map((s, i) => [i, s] as const))("sample #%i: redacting twice equals once", (_i, sample) => {
    const once = redactText(sample);
    const twice = redactText(once.text);
    expect(twice.text).toBe(once.text);
    expect(twice.findings).toEqual([]);
  });

  it("holds for random mixtures of secret fragments, separators and prose", () => {
    const fragments = [
      ...plantAll(11).map((p) => p.text),
      "password",
      "=",
      ": ",
      '"',
      "'",
      "\\",
      "Bearer ",
      "Authorization: ",
      "Cookie: ",
      "https://",
      "user:",
      "@",
      "/",
      "[REDACTED:jwt]",
      "[REDACTED:",
      "]",
      "-----BEGIN PRIVATE KEY-----",
      "-----END PRIVATE KEY-----",
      "-----",
      "eyJ",
      ".",
      "sk-",
      "_",
      "token",
      " ",
      "\n",
      "hello",
      f.pick(ALNUM, 24),
    ];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...fragments), { maxLength: 30 }), (parts) => {
        const once = redactText(parts.join("")).text;
        expect(redactText(once).text).toBe(once);
      }),
      { numRuns: 500, seed: 4242 },
    );
  });

  it("holds for arbitrary strings", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (s) => {
        const once = redactText(s).text;
        expect(redactText(once).text).toBe(once);
      }),
      { numRuns: 500, seed: 99 },
    );
  });

  it("is deterministic", () => {
    const input = plantAll(3).map((p) => p.text).join("\n");
    expect(redactText(input)).toEqual(redactText(input));
  });
});

describe("redactText: adversarial long inputs (linear time; run, no timing asserts)", () => {
  const N = 200_000;
  const inputs: [string, string][] = [
    ["one long alphanumeric run", "a".repeat(N)],
    ["one long base64 run", f.pick(BASE64, N)],
    ["repeated separators", "a_".repeat(N / 2)],
    ["repeated dashes", "-".repeat(N)],
    ["BEGIN without END, repeated", "-----BEGIN RSA PRIVATE KEY-----\n".repeat(N / 32)],
    ["BEGIN then a long body", `-----BEGIN PRIVATE KEY-----\n${"A-".repeat(N / 2)}`],
    ['repeated password=" unterminated', 'password="\\'.repeat(N / 11)],
    ["repeated key prefixes", "password_".repeat(N / 9)],
    ["keyword-laden run", "token-secret_password.".repeat(N / 22)],
    ["quoted escapes without close", `password="${'\\"'.repeat(N / 2)}`],
    ["escaped JSON without close", `{\\"password\\": \\"${"a".repeat(N)}`],
    ["scheme without @", `https://user:${"p".repeat(N)}`],
    ["many schemes", "a://b:c".repeat(N / 7)],
    ["repeated sk-", "sk-".repeat(N / 3)],
    ["repeated eyJ", "eyJ.".repeat(N / 4)],
    ["jwt-like dots", `eyJ${"a".repeat(10)}.${"b.".repeat(N / 2)}`],
    ["repeated Bearer", "Bearer ".repeat(N / 7)],
    ["repeated Authorization", "Authorization: ".repeat(N / 15)],
    ["repeated cookie", "Cookie: ".repeat(N / 8)],
    ["uppercase run", "AKIA".repeat(N / 4)],
    ["camel humps", "aB1".repeat(N / 3)],
    ["hex run then letter", `${"abcdef0123".repeat(N / 10)}X`],
    ["AIza then long", `AIza${"A".repeat(N)}`],
    ["many short secrets", `password=x1 ${awsId} `.repeat(N / 40)],
    ["placeholders", "[REDACTED:jwt]".repeat(N / 14)],
    ["percent escapes", "%41".repeat(N / 3)],
    ["percent escapes and stray percents", "a%4%41%".repeat(N / 8)],
    ["newlines", "\n".repeat(N)],
  ];

  it.each(inputs)("%s", (_name, input) => {
    const result = redactText(input);
    expect(typeof result.text).toBe("string");
    expect(redactText(result.text).text).toBe(result.text);
  });

  it("handles a 5 MB text", () => {
    const big = `${"The session went fine. ".repeat(100_000)}${f.pick(BASE64, 2_000_000)} password=hunter2`;
    const result = redactText(big);
    expect(result.text.endsWith("[REDACTED:high-entropy] password=[REDACTED:secret-assignment]")).toBe(true);
  });
});

describe("isSecretKeyName", () => {
  it.each([
    "password",
    "PASSWORD",
    "db_password",
    "DB-PASSWD",
    "passphrase",
    "client_secret",
    "clientSecret",
    "GITHUB_TOKEN",
    "accessToken",
    "refresh_token",
    "api_key",
    "apiKey",
    "x-api-key",
    "secretAccessKey",
    "private_key",
    "credentials",
    "Authorization",
    "proxy-authorization",
    "Cookie",
    "set-cookie",
  ])(
    "%s is secret",
    (key) => expect(isSecretKeyName(key)).toBe(true),
  );
  it.each([
    "max_tokens",
    "input_tokens",
    "tokenizer",
    "password_file",
    "prompt_cache_key",
    "sort_key",
    "key",
    "secrets",
    "path",
    "command",
    "accessKeyId",
    "passwordHash",
  ])(
    "%s is not",
    (key) => expect(isSecretKeyName(key)).toBe(false),
  );
});

describe("redactJson", () => {
  it("redacts strings at every depth, and keys", () => {
    const input = {
      command: `curl -H "Authorization: Bearer ${bearer}"`,
      nested: { list: [1, true, null, { note: `aws ${awsId}` }], deeper: { a: { b: { c: `password=hunter2` } } } },
      [ghTokens[0]!]: "a key that is a secret",
    };
    const { value, findings } = redactJson(input);
    expect(value).toEqual({
      command: 'curl -H "Authorization: Bearer [REDACTED:bearer-token]"',
      nested: { list: [1, true, null, { note: "aws [REDACTED:aws-access-key-id]" }], deeper: { a: { b: { c: "password=[REDACTED:secret-assignment]" } } } },
      "[REDACTED:github-token]": "a key that is a secret",
    });
    expect(findings.map((x) => x.detector).sort()).toEqual(["aws-access-key-id", "bearer-token", "github-token", "secret-assignment"]);
  });

  it("replaces whole values under secret-named keys, numbers too, keeping booleans and null", () => {
    const { value } = redactJson({
      password: "hunter2",
      pin_token: 1234,
      headers: { Authorization: "Basic abc", "X-Api-Key": "k" },
      credentials: { user: "alice", port: 5432, enabled: true, none: null },
      token: "",
      apiKey: "[REDACTED:openai-api-key]",
      max_tokens: 4096,
    });
    expect(value).toEqual({
      password: "[REDACTED:secret-assignment]",
      pin_token: "[REDACTED:secret-assignment]",
      headers: { Authorization: "[REDACTED:secret-assignment]", "X-Api-Key": "[REDACTED:secret-assignment]" },
      credentials: { user: "[REDACTED:secret-assignment]", port: "[REDACTED:secret-assignment]", enabled: true, none: null },
      token: "",
      apiKey: "[REDACTED:openai-api-key]",
      max_tokens: 4096,
    });
  });

  it("keeps keys apart when two redact to the same text", () => {
    const { value } = redactJson({ [ghTokens[0]!]: 1, [ghTokens[1]!]: 2 });
    expect(value).toEqual({ "[REDACTED:github-token]": 1, "[REDACTED:github-token] (2)": 2 });
  });

  it("does not mutate its input and returns new objects", () => {
    const input = { a: { b: [`password=hunter2`] }, c: "plain" };
    const snapshot = structuredClone(input);
    const { value } = redactJson(input);
    expect(input).toEqual(snapshot);
    expect(value).not.toBe(input);
    expect(value.a).not.toBe(input.a);
  });

  it("keeps a __proto__ key as data", () => {
    const input = JSON.parse('{"__proto__": {"password": "x"}, "ok": 1}') as Record<string, unknown>;
    const { value } = redactJson(input);
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(JSON.stringify(value)).toBe('{"__proto__":{"password":"[REDACTED:secret-assignment]"},"ok":1}');
  });

  it("is idempotent", () => {
    const input = { a: plantAll(5).map((p) => p.text), password: "x", [ghTokens[2]!]: { token: 5 } };
    const once = redactJson(input).value;
    const twice = redactJson(once);
    expect(twice.value).toEqual(once);
    expect(twice.findings).toEqual([]);
  });

  it("refuses nesting past MAX_JSON_DEPTH with a typed error instead of overflowing the stack (100,000 levels)", () => {
    let deep: unknown = "x";
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const error = (() => {
      try {
        redactJson(deep);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(LimitExceededError);
    expect((error as LimitExceededError).details).toMatchObject({ limit: "MAX_JSON_DEPTH", max: MAX_JSON_DEPTH });
    let fits: unknown = "x";
    for (let i = 0; i < MAX_JSON_DEPTH; i++) fits = [fits];
    expect(redactJson(fits).findings).toEqual([]);
  });
});
