/**
 * meta.json `provider` (docs/FORMAT.md): set on import from the source, updated by each
 * commit that adds an assistant message with a provider, used by every export. Tried with
 * Rho's own snapshot fixture (test/formats/fixtures/rho/upstream/).
 */
import { describe, expect, it } from "vitest";
import { readRhoSnapshot, writeDeepCodeV1, writeRhoSnapshot } from "../../core/formats/mod.ts";
import { expectDeepCodeReads } from "./deepcode-reader.ts";
import { expectRhoReads } from "./rho-reader.ts";
import { fixture, memorySessions, text } from "./support.ts";

const FIXTURE_PROVIDER = { provider: "fixture-provider", api: "fixture-api", model: "fixture-model" };

describe("meta.json provider", () => {
  it("an imported Rho snapshot keeps its provider, prompt_cache_key and revision through an export", async () => {
    const sessions = memorySessions();
    const source = readRhoSnapshot(fixture("rho/upstream/session-snapshot-v2.json"), "session-snapshot-v2.json");
    const session = await sessions.importPortable("a1/w1/rho", source);
    expect(session.meta.provider).toEqual(FIXTURE_PROVIDER);
    const exported = writeRhoSnapshot(await session.exportPortable());
    expectRhoReads(exported);
    const back = JSON.parse(text(exported));
    expect(back).toMatchObject({ provider: FIXTURE_PROVIDER, revision: 5, prompt_cache_key: "rho:fixture-cache", metadata: { title: "snapshot v2" } });
    // DeepCode's model after a Rho import is the source's model (it was lost before).
    const deepcode = writeDeepCodeV1(await session.exportPortable(), { cwd: "/w" });
    expectDeepCodeReads(deepcode);
    expect(JSON.parse(text(deepcode).split("\n")[0]!)).toMatchObject({ model: "fixture-model" });
  });

  it("a commit with a new assistant provider updates it; a commit without one keeps it", async () => {
    const sessions = memorySessions();
    const session = await sessions.importPortable("a1/w1/rho", readRhoSnapshot(fixture("rho/upstream/session-snapshot-v2.json"), "s.json"));
    await session.append({ role: "user", parts: [{ type: "text", text: "and now?" }] });
    expect(session.meta.provider).toEqual(FIXTURE_PROVIDER);
    const next = { provider: "openai", api: "responses", model: "gpt-5" };
    await session.append({ role: "assistant", status: "completed", provider: next, parts: [{ type: "text", text: "done" }] });
    expect(session.meta.provider).toEqual(next);
    const reopened = await sessions.open("a1/w1/rho");
    expect(reopened.meta.provider).toEqual(next);
    expect(JSON.parse(text(writeRhoSnapshot(await reopened.exportPortable()))).provider).toEqual(next);
  });
});
