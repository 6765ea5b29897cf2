/**
 * Rho's portable fallback, both sides: what Rho's `with_portable_fallback` writes (a
 * `provider_context` block of kind `rho.sdk.portable_fallback.v1`, identity the provenance or
 * three empty strings; older files: a `portable_fallback` field) is read and written back the
 * same way, and the composer sends it to another model as Rho's `prepare_assistant` does.
 */
import { describe, expect, it } from "vitest";
import { compose, MessageRecord, type ProviderIdentity } from "../../core/mod.ts";
import { readRhoSnapshot, writeRhoSnapshot } from "../../core/formats/mod.ts";
import { expectFormatError, fixture, memorySessions, text, thrown, utf8 } from "./support.ts";
import type { LooseJson } from "../support/loose-json.ts";

const FILE = "snapshot-portable-fallback.json";
const SOURCE: ProviderIdentity = { provider: "openai-codex", api: "openai-responses", model: "gpt-test" };
const FOREIGN: ProviderIdentity = { provider: "anthropic", api: "anthropic-messages", model: "claude-test" };
const rhoOf = (m: MessageRecord): unknown => (m as Record<string, unknown>).rho;

function doc(): Record<string, LooseJson> {
  return JSON.parse(text(fixture(`rho/${FILE}`)));
}

function read(document: unknown) {
  return readRhoSnapshot(utf8(JSON.stringify(document)), FILE);
}

describe("Rho portable fallback: import", () => {
  it("takes the fallback block out of the provider context, with or without provenance", () => {
    const s = readRhoSnapshot(fixture(`rho/${FILE}`), FILE);
    const assistants = s.messages.filter((m) => m.role === "assistant");
    expect(assistants.map(rhoOf)).toEqual([
      { portable_fallback: "The earlier conversation was compacted by the provider; its summary is not readable here." },
      { portable_fallback: "Changed src/add.ts and test/add.test.ts." },
      { portable_fallback: "portable notice" },
    ]);
    // The opaque blocks stay provider context; the fallback blocks are not parts.
    expect(assistants.map((m) => m.parts.map((p) => (p.type === "provider-context" ? `context:${String(p.kind)}` : p.type)))).toEqual([
      ["context:openai_response_output_item"],
      ["text"],
      ["reasoning-summary", "context:openai_response_output_item", "text"],
    ]);
    expect(assistants[1]!.provider).toBeUndefined();
    for (const m of s.messages) expect(MessageRecord.safeParse(m).success).toBe(true);
  });

  it("reads an older writer's portable_fallback field as Rho's deserializer does: it replaces a fallback block", () => {
    const d = doc();
    const enriched = d.history[6].EnrichedAssistant;
    enriched.portable_fallback = "from the field";
    expect(rhoOf(read(d).messages.at(-1)!)).toEqual({ portable_fallback: "from the field" });
    delete enriched.provider_context;
    expect(rhoOf(read(d).messages.at(-1)!)).toEqual({ portable_fallback: "from the field" });
  });

  it("a block of that kind with a position or non-text data is ordinary provider context, and needs an identity", () => {
    const d = doc();
    const block = d.history[4].EnrichedAssistant.provider_context[0];
    block.position = 0;
    expectFormatError(thrown(() => read(d)), { file: FILE, line: 1, path: "$.history[4].EnrichedAssistant.provider_context[0].identity.provider" });
    block.identity = SOURCE;
    const message = read(d).messages.find((m) => m.parts.some((p) => p.type === "provider-context" && p.kind === "rho.sdk.portable_fallback.v1"));
    expect(message && rhoOf(message)).toBeUndefined();
  });

  it("an AbortedAssistant has no portable_fallback field in Rho: such a field is ignored", () => {
    const d = doc();
    d.history.push({ AbortedAssistant: { content: [{ Text: "part" }], reasoning: "", portable_fallback: "ignored", tool_calls: [], usage: {} } });
    expect(rhoOf(read(d).messages.at(-1)!)).toBeUndefined();
  });
});

describe("Rho portable fallback: export", () => {
  it("writes the fallback back as Rho writes it: the last provider_context block", () => {
    const again = JSON.parse(text(writeRhoSnapshot(readRhoSnapshot(fixture(`rho/${FILE}`), FILE))));
    expect(again).toEqual(doc());
  });

  it("an older file's portable_fallback field comes back as the block, never as the field", () => {
    const d = doc();
    const enriched = d.history[4].EnrichedAssistant;
    delete enriched.provider_context;
    enriched.portable_fallback = "Changed src/add.ts and test/add.test.ts.";
    const again = JSON.parse(text(writeRhoSnapshot(read(d))));
    expect(again).toEqual(doc());
    expect(JSON.stringify(again)).not.toContain('"portable_fallback"');
  });

  it("keeps the fallback through a sessionfold session (import, store, export)", async () => {
    const session = await memorySessions().importPortable("a1/w1/rho-fallback", readRhoSnapshot(fixture(`rho/${FILE}`), FILE));
    const again = JSON.parse(text(writeRhoSnapshot(await session.exportPortable())));
    expect(again.history).toEqual(doc().history);
  });
});

describe("Rho portable fallback: composing for a model (Rho's handoff)", () => {
  const active = async () => {
    const session = await memorySessions().importPortable("a1/w1/rho-handoff", readRhoSnapshot(fixture(`rho/${FILE}`), FILE));
    return session.active;
  };
  const lastText = (m: MessageRecord): unknown => {
    const last = m.parts.at(-1);
    return last?.type === "text" ? last.text : undefined;
  };

  it("another model gets the fallback text instead of the context it cannot replay, and no reasoning summary", async () => {
    const messages = await active();
    const { input, omittedContext, portableFallbacks } = compose({ instruction: null, footer: undefined, active: messages, identity: FOREIGN });
    const assistants = input.messages.filter((m) => m.role === "assistant");
    expect(portableFallbacks).toEqual(messages.filter((m) => m.role === "assistant").map((m) => m.sequence));
    expect(assistants.map(lastText)).toEqual([
      "The earlier conversation was compacted by the provider; its summary is not readable here.",
      "Changed src/add.ts and test/add.test.ts.",
      "portable notice",
    ]);
    expect(assistants.flatMap((m) => m.parts.map((p) => p.type))).not.toContain("provider-context");
    expect(assistants[2]!.parts.map((p) => p.type)).toEqual(["text", "text"]); // the summary gave way, as in Rho
    expect(omittedContext).toHaveLength(2);
    // The stored messages are unchanged.
    expect(messages.at(-1)!.parts.map((p) => p.type)).toEqual(["reasoning-summary", "provider-context", "text"]);
  });

  it("the model that produced the context gets it, not the fallback; a message with no context for it still gets its fallback", async () => {
    const messages = await active();
    const compacted = messages.find((m) => m.provider?.provider === "openai-codex")!;
    const { input, portableFallbacks } = compose({ instruction: null, footer: undefined, active: messages, identity: SOURCE });
    expect(input.messages.find((m) => m.sequence === compacted.sequence)).toBe(compacted);
    const others = messages.filter((m) => m.role === "assistant" && m !== compacted).map((m) => m.sequence);
    expect(portableFallbacks).toEqual(others);
  });
});
