import { describe, expect, test } from "vitest";
import {
  AgentConfig,
  AgentConfigError,
  agentModelLabel,
  agentSessionOptions,
  DEFAULT_AGENT_CONFIG,
  formatAgentConfig,
  parseAgentConfig,
  readAgentConfig,
} from "../../core/agent/mod.ts";
import { afterMessages, atContextTokens, manualOnly, realUsage } from "../../core/compaction/policy.ts";
import { InvalidIdError, InvalidInputError, SessionfoldError } from "../../core/errors.ts";
import { agentConfigPath } from "../../core/layout/paths.ts";
import { MemoryStorage } from "../../core/storage/memory.ts";
import { generateSystem, resolveSessionOptions } from "../../core/session/options.ts";
import type { Summarizer } from "../../core/model/mod.ts";
import { ExtractiveSummarizer } from "../../core/summarizer/mod.ts";

const FILE = "agents/a1/agent.jsonc";

function configError(text: string): AgentConfigError {
  try {
    parseAgentConfig(text, FILE);
  } catch (error) {
    expect(error).toBeInstanceOf(AgentConfigError);
    expect(error).toBeInstanceOf(SessionfoldError);
    expect((error as AgentConfigError).code).toBe("invalid-input");
    return error as AgentConfigError;
  }
  throw new Error("expected parseAgentConfig to throw");
}

/** Asserts the error's location in both the message prefix and the details. */
function expectAt(error: AgentConfigError, line: number, column: number, path: string | null): void {
  expect(error.message.startsWith(`${FILE}:${line}:${column}: `)).toBe(true);
  expect(error.details).toMatchObject({ file: FILE, line, column, path });
}

const hostSummarizer: Summarizer = { summarize: async () => ({ text: "host summary" }) };

describe("parseAgentConfig: valid files", () => {
  test("accepts comments and trailing commas", () => {
    const text = [
      "// header",
      "/* block",
      "   comment */",
      "{",
      '  "instruction": "Be brief.", // inline',
      '  "plugins": [',
      '    { "name": "git", "instruction": "Use git.", },',
      "  ],",
      '  "model_label": "gpt-5",',
      '  "context_window": 128000,',
      '  "compaction": { "policy": "after-messages", "messages": 200, },',
      '  "summarizer": { "kind": "extractive", "max_chars": 2000 },',
      "}",
      "",
    ].join("\n");
    expect(parseAgentConfig(text, FILE)).toEqual({
      instruction: "Be brief.",
      plugins: [{ name: "git", instruction: "Use git." }],
      model_label: "gpt-5",
      context_window: 128000,
      compaction: { policy: "after-messages", messages: 200 },
      summarizer: { kind: "extractive", max_chars: 2000 },
    });
  });

  test("every field is optional; a BOM and CRLF line ends are fine", () => {
    expect(parseAgentConfig("{}", FILE)).toEqual({});
    expect(parseAgentConfig('\uFEFF{\r\n  "instruction": "x",\r\n}\r\n', FILE)).toEqual({ instruction: "x" });
  });

  test("keeps unknown fields at every level", () => {
    const text = JSON.stringify({
      x_top: { deep: [1, 2] },
      plugins: [{ name: "p", instruction: "i", x_plugin: true }],
      compaction: { policy: "manual", x_compaction: "kept" },
      summarizer: { kind: "host", endpoint: "https://example.invalid" },
    });
    const config = parseAgentConfig(text, FILE);
    expect(config.x_top).toEqual({ deep: [1, 2] });
    expect(config.plugins?.[0]).toEqual({ name: "p", instruction: "i", x_plugin: true });
    expect(config.compaction).toEqual({ policy: "manual", x_compaction: "kept" });
    expect(config.summarizer).toEqual({ kind: "host", endpoint: "https://example.invalid" });
  });

  test("a duplicated key keeps its last value", () => {
    expect(parseAgentConfig('{ "context_window": 1, "context_window": 2 }', FILE).context_window).toBe(2);
  });
});

describe("parseAgentConfig: syntax errors", () => {
  test("a missing comma is located at the exact line and column", () => {
    const error = configError(["{", '  "instruction": "x"', '  "context_window": 5', "}"].join("\n"));
    expect(error.message).toBe(`${FILE}:3:3: syntax error: comma expected`);
    expectAt(error, 3, 3, null);
    expect(error.details.syntax_error).toBe("CommaExpected");
  });

  test("an invalid token after a comment", () => {
    const error = configError(["{", "  // ok so far", '  "context_window": 12x', "}"].join("\n"));
    expectAt(error, 3, 23, null);
    expect(error.message).toMatch(/syntax error: /);
  });

  test("an unterminated block comment and an empty file", () => {
    expectAt(configError('{ "a": 1 }\n/* never closed'), 2, 1, null);
    const empty = configError("");
    expectAt(empty, 1, 1, null);
    expect(empty.message).toBe(`${FILE}:1:1: syntax error: value expected`);
  });

  test("lines are counted across CRLF line ends", () => {
    expectAt(configError('{\r\n  "a": 1\r\n  "b": 2\r\n}'), 3, 3, null);
  });
});

describe("parseAgentConfig: schema errors at the offending value", () => {
  test("context_window", () => {
    const text = ["{", "  // the window", '  "instruction": "Be brief.",', '  "context_window": 0,', "}"].join("\n");
    const error = configError(text);
    expect(error.message).toBe(`${FILE}:4:21: context_window: expected a positive integer`);
    expectAt(error, 4, 21, "context_window");
    expect(configError('{"context_window": 1.5}').message).toBe(`${FILE}:1:20: context_window: expected a positive integer`);
    expect(configError('{"context_window": "128k"}').message).toBe(`${FILE}:1:20: context_window: expected a positive integer`);
  });

  test("nested: compaction.messages", () => {
    const text = ["{", '  "compaction": {', '    "policy": "after-messages",', '    "messages": -3', "  }", "}"].join("\n");
    const error = configError(text);
    expect(error.message).toBe(`${FILE}:4:17: compaction.messages: expected a positive integer`);
    expectAt(error, 4, 17, "compaction.messages");
  });

  test("array index: plugins[1].name", () => {
    const text = [
      "{",
      '  "plugins": [',
      '    { "name": "git", "instruction": "Use git." },',
      '    { "name": 42, "instruction": "x" },',
      "  ],",
      "}",
    ].join("\n");
    const error = configError(text);
    expect(error.message).toBe(`${FILE}:4:15: plugins[1].name: expected a string`);
    expectAt(error, 4, 15, "plugins[1].name");
    expectAt(configError('{ "plugins": [ { "name": "", "instruction": "x" } ] }'), 1, 26, "plugins[0].name");
    expectAt(configError('{ "plugins": { } }'), 1, 14, "plugins");
  });

  test("an unknown policy or summarizer kind", () => {
    const policy = configError('{\n  "compaction": { "policy": "sometimes" }\n}');
    expect(policy.message).toBe(
      `${FILE}:2:29: compaction.policy: expected one of "real-usage", "after-messages", "at-context-tokens", "manual"`,
    );
    const kind = configError('{ "summarizer": { "kind": "llm" } }');
    expect(kind.message).toBe(`${FILE}:1:27: summarizer.kind: expected one of "extractive", "host"`);
    expectAt(configError('{ "summarizer": "extractive" }'), 1, 17, "summarizer");
  });

  test("ratio out of (0, 1]", () => {
    const error = configError('{ "context_window": 1000, "compaction": { "policy": "real-usage", "ratio": 1.5 } }');
    expect(error.message).toBe(`${FILE}:1:76: compaction.ratio: expected a number in (0, 1]`);
    expectAt(configError('{ "context_window": 1000, "compaction": { "policy": "real-usage", "ratio": 0 } }'), 1, 76, "compaction.ratio");
  });

  test("the root must be an object", () => {
    const error = configError("// nothing useful\n[1, 2]");
    expect(error.message).toBe(`${FILE}:2:1: expected a JSON object`);
    expectAt(error, 2, 1, "");
  });

  test("several problems: the first in the document is reported, all are listed", () => {
    const text = ["{", '  "summarizer": { "kind": "x" },', '  "context_window": 0', "}"].join("\n");
    const error = configError(text);
    expect(error.message).toMatch(new RegExp(`^${FILE}:2:27: summarizer\\.kind: .* \\(and 1 more\\)$`));
    expect(error.details.issues).toEqual([
      expect.objectContaining({ path: "summarizer.kind", line: 2, column: 27 }),
      expect.objectContaining({ path: "context_window", line: 3, column: 21 }),
    ]);
  });

  test("a duplicated key is located at the occurrence that counts (the last)", () => {
    expectAt(configError('{ "context_window": 5,\n  "context_window": 0 }'), 2, 21, "context_window");
  });
});

describe("parseAgentConfig: fields each policy requires", () => {
  test.each([
    ["after-messages", "messages", 'required by policy "after-messages": expected a positive integer'],
    ["at-context-tokens", "tokens", 'required by policy "at-context-tokens": expected a positive integer'],
  ])("%s without %s is located at the compaction object", (policy, field, message) => {
    const text = ["{", `  "compaction": { "policy": "${policy}" }`, "}"].join("\n");
    const error = configError(text);
    expect(error.message).toBe(`${FILE}:2:17: compaction.${field}: ${message}`);
    expectAt(error, 2, 17, `compaction.${field}`);
  });

  test("compaction without a policy", () => {
    const error = configError('{\n  "compaction": { "messages": 3 }\n}');
    expect(error.message).toBe(
      `${FILE}:2:17: compaction.policy: required: one of "real-usage", "after-messages", "at-context-tokens", "manual"`,
    );
  });

  test("real-usage needs context_window", () => {
    const error = configError('{\n  "compaction": { "policy": "real-usage" }\n}');
    expect(error.message).toBe(`${FILE}:2:29: compaction.policy: policy "real-usage" needs context_window`);
  });

  test("a plugin without instruction, a summarizer without kind", () => {
    expectAt(configError('{ "plugins": [ { "name": "git" } ] }'), 1, 16, "plugins[0].instruction");
    expect(configError('{ "plugins": [ { "name": "git" } ] }').message).toMatch(/plugins\[0\]\.instruction: required: expected a string$/);
    expectAt(configError('{ "summarizer": { "max_chars": 10 } }'), 1, 17, "summarizer.kind");
  });

  test("manual and real-usage (with context_window) need nothing else", () => {
    expect(parseAgentConfig('{ "compaction": { "policy": "manual" } }', FILE).compaction).toEqual({ policy: "manual" });
    expect(parseAgentConfig('{ "context_window": 8, "compaction": { "policy": "real-usage" } }', FILE).compaction).toEqual({
      policy: "real-usage",
    });
  });
});

describe("agentSessionOptions", () => {
  test.each(
    [
      [{ policy: "real-usage", ratio: 0.8 }, realUsage(0.8)],
      [{ policy: "real-usage" }, realUsage(0.95)],
      [{ policy: "after-messages", messages: 200 }, afterMessages(200)],
      [{ policy: "at-context-tokens", tokens: 100_000 }, atContextTokens(100_000)],
      [{ policy: "manual" }, manualOnly()],
    ] as const,
  )("maps compaction %j", (compaction, policy) => {
    const options = agentSessionOptions({ context_window: 128_000, compaction });
    expect(options.policy).toEqual(policy);
    expect(options.contextWindow).toBe(128_000);
    expect(() => resolveSessionOptions(options)).not.toThrow();
  });

  test("without compaction the session default applies", () => {
    const withWindow = agentSessionOptions({ context_window: 1000 });
    expect(withWindow.policy).toBeUndefined();
    expect(resolveSessionOptions(withWindow).policy).toEqual(realUsage());
    expect(resolveSessionOptions(agentSessionOptions({})).policy).toEqual(manualOnly());
  });

  test("maps the instruction and plugins to the agent (without unknown plugin fields)", () => {
    const options = agentSessionOptions({
      instruction: "Be brief.",
      plugins: [{ name: "git", instruction: "Use git.", x: 1 }],
    });
    expect(options.agent).toEqual({ instruction: "Be brief.", plugins: [{ name: "git", instruction: "Use git." }] });
    expect(generateSystem(options.agent)).toBe("Be brief.\n\n## git\nUse git.");
    expect(agentSessionOptions({}).agent).toEqual({});
  });

  test("extractive summarizer with max_chars", () => {
    const options = agentSessionOptions({ summarizer: { kind: "extractive", max_chars: 1234 } }, { summarizer: hostSummarizer });
    expect(options.summarizer).toBeInstanceOf(ExtractiveSummarizer);
    expect((options.summarizer as ExtractiveSummarizer).maxChars).toBe(1234);
    expect((agentSessionOptions({ summarizer: { kind: "extractive" } }).summarizer as ExtractiveSummarizer).maxChars).toBe(4000);
  });

  test("host summarizer: required when the file says so", () => {
    expect(agentSessionOptions({ summarizer: { kind: "host" } }, { summarizer: hostSummarizer }).summarizer).toBe(hostSummarizer);
    let error: unknown;
    try {
      agentSessionOptions({ summarizer: { kind: "host" } });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as Error).message).toMatch(/requires a host summarizer/);
    expect(() => agentSessionOptions({ summarizer: { kind: "host" } }, {})).toThrow(InvalidInputError);
  });

  test("no summarizer field: the host's if given, else extractive", () => {
    expect(agentSessionOptions({}, { summarizer: hostSummarizer }).summarizer).toBe(hostSummarizer);
    expect(agentSessionOptions({}).summarizer).toBeInstanceOf(ExtractiveSummarizer);
  });

  test("refuses a config built in code that the schema rejects", () => {
    expect(() => agentSessionOptions({ context_window: -1 })).toThrow(InvalidInputError);
    expect(() => agentSessionOptions({ compaction: { policy: "after-messages" } } as unknown as AgentConfig)).toThrow(InvalidInputError);
    expect(() => agentSessionOptions({ compaction: { policy: "real-usage" } })).toThrow(InvalidInputError);
  });

  test("agentModelLabel", () => {
    expect(agentModelLabel({ model_label: "gpt-5" })).toBe("gpt-5");
    expect(agentModelLabel({})).toBeUndefined();
  });
});

describe("DEFAULT_AGENT_CONFIG and formatAgentConfig", () => {
  test("the default is valid, frozen and maps to automatic compaction", () => {
    expect(AgentConfig.parse(DEFAULT_AGENT_CONFIG)).toEqual(DEFAULT_AGENT_CONFIG);
    expect(Object.isFrozen(DEFAULT_AGENT_CONFIG)).toBe(true);
    expect(Object.isFrozen(DEFAULT_AGENT_CONFIG.compaction)).toBe(true);
    const options = resolveSessionOptions(agentSessionOptions(DEFAULT_AGENT_CONFIG));
    expect(options.policy).toEqual(realUsage(0.95));
    expect(options.summarizer).toBeInstanceOf(ExtractiveSummarizer);
  });

  test("format → parse round-trips, header and comments included", () => {
    const text = formatAgentConfig(DEFAULT_AGENT_CONFIG);
    expect(text.startsWith("// sessionfold agent definition")).toBe(true);
    expect(text).toContain('// When to compact: "real-usage"');
    expect(text.endsWith("}\n")).toBe(true);
    expect(parseAgentConfig(text, FILE)).toEqual(DEFAULT_AGENT_CONFIG);
  });

  test("round-trips unknown fields, multi-line strings and an empty config", () => {
    const config: AgentConfig = {
      instruction: 'Line one.\nLine "two".',
      plugins: [{ name: "a", instruction: "b", extra: [1, { c: null }] }],
      model_label: "m",
      context_window: 10,
      compaction: { policy: "at-context-tokens", tokens: 9 },
      summarizer: { kind: "host" },
      x_custom: { nested: true },
    };
    expect(parseAgentConfig(formatAgentConfig(config), FILE)).toEqual(config);
    expect(parseAgentConfig(formatAgentConfig({}), FILE)).toEqual({});
  });

  test("refuses to format an invalid config", () => {
    expect(() => formatAgentConfig({ context_window: 0 })).toThrow(InvalidInputError);
  });
});

describe("readAgentConfig", () => {
  test("reads agents/<id>/agent.jsonc; a missing file is undefined", async () => {
    const storage = new MemoryStorage();
    expect(await readAgentConfig(storage, "a1")).toBeUndefined();
    await storage.replace(agentConfigPath("a1"), new TextEncoder().encode(formatAgentConfig(DEFAULT_AGENT_CONFIG)));
    expect(await readAgentConfig(storage, "a1")).toEqual(DEFAULT_AGENT_CONFIG);
  });

  test("errors name the file; invalid UTF-8 and bad ids are typed", async () => {
    const storage = new MemoryStorage();
    await storage.replace(agentConfigPath("a1"), new TextEncoder().encode('{\n  "context_window": true\n}'));
    await expect(readAgentConfig(storage, "a1")).rejects.toThrow(`${FILE}:2:21: context_window: expected a positive integer`);
    await storage.replace(agentConfigPath("a1"), new Uint8Array([0x7b, 0x0a, 0x22, 0xff, 0x22, 0x7d]));
    const error = await readAgentConfig(storage, "a1").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentConfigError);
    expect((error as AgentConfigError).message).toBe(`${FILE}:2:2: not valid UTF-8`);
    await expect(readAgentConfig(storage, "../x")).rejects.toBeInstanceOf(InvalidIdError);
  });
});
