import * as z from "zod";

const POLICIES = ["real-usage", "after-messages", "at-context-tokens", "manual"] as const;
const SUMMARIZER_KINDS = ["extractive", "host"] as const;

const oneOf = (values: readonly string[]): string => values.map((v) => JSON.stringify(v)).join(", ");

/** A zod error message that says "required" when the value is absent, else `expected`. */
function expecting(expected: string, requiredBy?: string): (issue: { input?: unknown }) => string {
  return (issue: { input?: unknown }): string => issue.input === undefined ? `required${requiredBy ? ` by ${requiredBy}` : ""}: ${expected}` : expected;
}

const positiveInt = (requiredBy?: string): z.ZodInt =>
  z.int({ error: expecting("expected a positive integer", requiredBy) }).min(1, { error: "expected a positive integer" });
const text = (): z.ZodString => z.string({ error: expecting("expected a string") });

/**
 * One plugin: a named section appended to the agent's instruction.
 *
 * @example
 * ```ts
 * AgentPluginConfig.safeParse({ name: "git", instruction: "Use git." }).success; // true
 * ```
 * @throws {z.ZodError} from `.parse()` only; {@linkcode parseAgentConfig} throws typed errors instead.
 */
export const AgentPluginConfig: z.ZodObject<{ name: z.ZodString; instruction: z.ZodString }, z.core.$loose> = z.looseObject(
  {
    name: text().min(1, { error: "expected a non-empty string" }),
    instruction: text(),
  },
  { error: "expected an object { name, instruction }" },
);

/**
 * When the agent's sessions compact; the numbers each policy needs.
 *
 * @example
 * ```ts
 * AgentCompactionConfig.safeParse({ policy: "after-messages", messages: 200 }).success; // true
 * AgentCompactionConfig.safeParse({ policy: "after-messages" }).success; // false: messages is required
 * ```
 * @throws {z.ZodError} from `.parse()` only; {@linkcode parseAgentConfig} throws typed errors instead.
 */
export const AgentCompactionConfig: z.ZodDiscriminatedUnion<
  [
    z.ZodObject<{ policy: z.ZodLiteral<"real-usage">; ratio: z.ZodOptional<z.ZodNumber> }, z.core.$loose>,
    z.ZodObject<{ policy: z.ZodLiteral<"after-messages">; messages: z.ZodInt }, z.core.$loose>,
    z.ZodObject<{ policy: z.ZodLiteral<"at-context-tokens">; tokens: z.ZodInt }, z.core.$loose>,
    z.ZodObject<{ policy: z.ZodLiteral<"manual"> }, z.core.$loose>,
  ],
  "policy"
> = z.discriminatedUnion(
  "policy",
  [
    z.looseObject({
      policy: z.literal("real-usage"),
      /** Share of `context_window` real usage must reach, in (0, 1]. Default 0.95. */
      ratio: z
        .number({ error: "expected a number in (0, 1]" })
        .gt(0, { error: "expected a number in (0, 1]" })
        .lte(1, { error: "expected a number in (0, 1]" })
        .optional(),
    }),
    z.looseObject({ policy: z.literal("after-messages"), messages: positiveInt('policy "after-messages"') }),
    z.looseObject({ policy: z.literal("at-context-tokens"), tokens: positiveInt('policy "at-context-tokens"') }),
    z.looseObject({ policy: z.literal("manual") }),
  ],
  {
    error: (issue) => {
      if (typeof issue.input !== "object" || issue.input === null || Array.isArray(issue.input)) {
        return `expected an object { policy: ${oneOf(POLICIES)} }`;
      }
      const policy = (issue.input as { policy?: unknown }).policy;
      return policy === undefined ? `required: one of ${oneOf(POLICIES)}` : `expected one of ${oneOf(POLICIES)}`;
    },
  },
);

/**
 * Who writes the cumulative summary: the built-in extractive one, or the host's own.
 *
 * @example
 * ```ts
 * AgentSummarizerConfig.safeParse({ kind: "extractive", max_chars: 2000 }).success; // true
 * ```
 * @throws {z.ZodError} from `.parse()` only; {@linkcode parseAgentConfig} throws typed errors instead.
 */
export const AgentSummarizerConfig: z.ZodDiscriminatedUnion<
  [
    z.ZodObject<{ kind: z.ZodLiteral<"extractive">; max_chars: z.ZodOptional<z.ZodInt> }, z.core.$loose>,
    z.ZodObject<{ kind: z.ZodLiteral<"host"> }, z.core.$loose>,
  ],
  "kind"
> = z.discriminatedUnion(
  "kind",
  [
    z.looseObject({ kind: z.literal("extractive"), max_chars: positiveInt().optional() }),
    z.looseObject({ kind: z.literal("host") }),
  ],
  {
    error: (issue) => {
      if (typeof issue.input !== "object" || issue.input === null || Array.isArray(issue.input)) {
        return `expected an object { kind: ${oneOf(SUMMARIZER_KINDS)} }`;
      }
      const kind = (issue.input as { kind?: unknown }).kind;
      return kind === undefined ? `required: one of ${oneOf(SUMMARIZER_KINDS)}` : `expected one of ${oneOf(SUMMARIZER_KINDS)}`;
    },
  },
);

/**
 * An agent definition, `agents/<agent_id>/agent.jsonc`. Every field is optional and
 * unknown fields are kept (at every level), so a newer file survives an older reader.
 *
 * - `instruction`: the agent's system instruction (used when a session has no `instruction.md`).
 * - `plugins`: sections appended to it, `## <name>\n<instruction>` each.
 * - `model_label`: a label for the model, for `meta.json`'s `model_label`.
 * - `context_window`: the model's context window in tokens.
 * - `compaction`: `{ policy: "real-usage", ratio? }` (default ratio 0.95; needs
 *   `context_window`), `{ policy: "after-messages", messages }`,
 *   `{ policy: "at-context-tokens", tokens }` or `{ policy: "manual" }`.
 * - `summarizer`: `{ kind: "extractive", max_chars? }` or `{ kind: "host" }`.
 *
 * @example
 * ```ts
 * const config = AgentConfig.parse({ instruction: "Be brief.", context_window: 128000 });
 * ```
 * @throws {z.ZodError} from `.parse()` only; {@linkcode parseAgentConfig} throws
 * {@linkcode AgentConfigError} with the file, line and column instead.
 */
export const AgentConfig: z.ZodObject<
  {
    instruction: z.ZodOptional<z.ZodString>;
    plugins: z.ZodOptional<z.ZodArray<typeof AgentPluginConfig>>;
    model_label: z.ZodOptional<z.ZodString>;
    context_window: z.ZodOptional<z.ZodInt>;
    compaction: z.ZodOptional<typeof AgentCompactionConfig>;
    summarizer: z.ZodOptional<typeof AgentSummarizerConfig>;
  },
  z.core.$loose
> = z
  .looseObject(
    {
      instruction: text().optional(),
      plugins: z.array(AgentPluginConfig, { error: "expected an array of { name, instruction }" }).optional(),
      model_label: text().min(1, { error: "expected a non-empty string" }).optional(),
      context_window: positiveInt().optional(),
      compaction: AgentCompactionConfig.optional(),
      summarizer: AgentSummarizerConfig.optional(),
    },
    { error: "expected a JSON object" },
  )
  .superRefine((config, ctx) => {
    if (config.compaction?.policy === "real-usage" && config.context_window === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["compaction", "policy"],
        message: 'policy "real-usage" needs context_window',
      });
    }
  });

/** The parsed shape of {@linkcode AgentPluginConfig}. */
export type AgentPluginConfig = z.infer<typeof AgentPluginConfig>;
/** The parsed shape of {@linkcode AgentCompactionConfig}. */
export type AgentCompactionConfig = z.infer<typeof AgentCompactionConfig>;
/** The parsed shape of {@linkcode AgentSummarizerConfig}. */
export type AgentSummarizerConfig = z.infer<typeof AgentSummarizerConfig>;
/** The parsed shape of {@linkcode AgentConfig}. */
export type AgentConfig = z.infer<typeof AgentConfig>;

/**
 * The agent file `sessionfold` writes when an agent has none: a generic instruction,
 * a 128k-token window compacted at 95% of real usage, and the built-in extractive
 * summarizer. Frozen; copy it (`structuredClone`) to change it.
 *
 * @example
 * ```ts
 * import { formatAgentConfig } from "sessionfold";
 *
 * const text = formatAgentConfig(DEFAULT_AGENT_CONFIG);
 * const mine: AgentConfig = { ...structuredClone(DEFAULT_AGENT_CONFIG), model_label: "gpt-5" };
 * ```
 * @throws {TypeError} (strict mode) when code assigns to it: it is deeply frozen.
 */
export const DEFAULT_AGENT_CONFIG: AgentConfig = deepFreeze({
  instruction: "You are a helpful assistant.",
  plugins: [],
  context_window: 128_000,
  compaction: { policy: "real-usage", ratio: 0.95 },
  summarizer: { kind: "extractive", max_chars: 4000 },
});

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
