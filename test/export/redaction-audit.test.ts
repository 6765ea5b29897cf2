/**
 * The redaction audit of every export path (docs/FORMAT.md "Importing and exporting other
 * systems' sessions", its "Redaction" item). A session carries a DIFFERENT planted secret of every kind in
 * EVERY field a writer can emit: each message's text (and a secret split across two
 * adjacent text parts), raw reasoning, reasoning summary, tool call id, tool name, tool input
 * and output (nested, under secret-named keys and as keys), tool error, file name, URL, media
 * type and data (base64), provider-context data, kind and model, extension fields, the
 * session id, message ids, the system prompt (and a later Rho system message), title,
 * model label, summary, segment summaries, metadata, prompt-cache key and cwd.
 *
 * - The control: without redaction, the test knows exactly which planted fields reach each
 *   writer's output (`CARRIED`), and every other field is one that writer has no place for.
 *   So "no leak" below is a statement about every field the writer emits. A writer added to
 *   core/formats is picked up and must be given its row.
 * - With `redact: true`, no planted secret, nor any 12-char piece of one, appears anywhere in
 *   any output (raw bytes, JSON strings with escapes undone, JSON inside strings, base64
 *   decoded), through prepareExport, every writer, a real session and the CLI's `--redact`
 *   for every `--to`.
 * - Ids that held a secret are replaced consistently: tool calls still pair with their results.
 * - Every detector has a planted secret that it finds.
 */
import { describe, expect, it } from "vitest";
import { type MessagePart, REDACTION_DETECTORS, redactText } from "../../core/mod.ts";
import * as formats from "../../core/formats/mod.ts";
import { type ExportOptions, prepareExport } from "../../core/export/mod.ts";
import {
  auditSession,
  carried,
  expectedCarried,
  FIELDS,
  leaksIn,
  NOT_CARRIED,
  type Output,
  outputsOf,
  PLANTS,
  secretsOf,
  token,
  viaRealSession,
  WRITERS,
} from "./audit.ts";
import { plantAll } from "./secrets.ts";
import { base64Of, MARKERS, PNG_1X1, readableViews, sessionWith } from "./support.ts";

describe("redaction audit: the control (nothing redacted)", () => {
  const unredacted = outputsOf(prepareExport(auditSession(), {}).session);

  it("plants different secrets in every field", () => {
    const all = secretsOf();
    expect(new Set(all.map((s) => s.value)).size).toBe(all.length);
    // Every field of the portable model a writer reads has a plant: the field list is the session's own keys and part fields.
    expect(FIELDS).toHaveLength(34);
  });

  it("audits every writer of core/formats, each with a row in the control table", () => {
    expect(WRITERS.map(([name]) => name)).toEqual(expect.arrayContaining(["writeDeepCodeV1", "writePi", "writeRhoSnapshot"]));
    for (const [name] of WRITERS) expect(Object.keys(NOT_CARRIED), name).toContain(name);
  });

  it.each(unredacted.map((o) => [o.name, o] as const))("%s carries exactly the fields it has a place for", (name, output) => {
    expect(carried(output)).toEqual(expectedCarried(name));
  });
});

describe("redaction audit: no planted secret leaves, through any export path", () => {
  it.each(outputsOf(prepareExport(auditSession(), { redact: true }).session).map((o) => [o.name, o] as const))("%s", (_name, output) => {
    expect(leaksIn(output)).toEqual([]);
  });

  it("a real session (importPortable → exportPortable → prepareExport) leaks nothing through any writer", async () => {
    const exported = await viaRealSession(auditSession());
    // The round trip keeps what a sessionfold session stores (the audit would be empty otherwise).
    expect(exported.title).toBe(PLANTS.title.text);
    expect(exported.system).toBe(PLANTS.system.text);
    expect(exported.cwd).toBe(PLANTS.cwd.text);
    expect(exported.sourceId).toBe(`session-${token("sourceId")}`);
    expect(exported.segments?.[0]?.summary).toBe(PLANTS.segmentSummary.text);
    const { session } = prepareExport(exported, { redact: true });
    for (const output of outputsOf(session)) expect(leaksIn(output), output.name).toEqual([]);
  });

  it("also with every drop flag on top of redaction", () => {
    const options: ExportOptions = {
      redact: true,
      dropSystemPrompt: true,
      dropToolOutputs: true,
      dropFileData: true,
      dropProviderContext: true,
      dropMetadata: true,
      dropReasoning: true,
    };
    for (const output of outputsOf(prepareExport(auditSession(), options).session)) expect(leaksIn(output), output.name).toEqual([]);
  });

  it("ids that held a secret are replaced consistently: the tool call still pairs with its result in every format", async () => {
    const { session } = prepareExport(auditSession(), { redact: true });
    const tool = session.messages[2]!.parts.find((p) => p.type === "tool")! as Extract<MessagePart, { type: "tool" }>;
    expect(tool.tool_call_id).toMatch(/\[REDACTED:[a-z-]+#\d+\]/);
    expect(tool.tool_call_id).not.toContain(token("toolCallId").slice(8, 20));
    // Reading each export back gives one call with its result under the same (redacted) id.
    const pi = (await formats.readPi(formats.writePi(session), "audit.jsonl")).session;
    const rho = formats.readRhoSnapshot(formats.writeRhoSnapshot(session), "audit.json");
    const deepcode = formats.readDeepCode({ file: "audit.v1.jsonl", bytes: formats.writeDeepCodeV1(session) });
    for (const [name, read] of [["pi", pi], ["rho", rho], ["deepcode", deepcode.session]] as const) {
      const calls = read.messages.flatMap((m) => m.parts).filter((p): p is Extract<MessagePart, { type: "tool" }> =>
        p.type === "tool" && p.tool_call_id === tool.tool_call_id
      );
      expect(calls.map((c) => c.state), name).toEqual(["output-available"]);
    }
  });

  it("the same secret gets the same placeholder throughout an export, a different one another", () => {
    const [a, b] = [PLANTS.toolCallId.text, PLANTS.toolName.text];
    const tool = (id: string, sequence: number) => ({
      sequence,
      type: "tool" as const,
      tool_call_id: id,
      tool_name: "t",
      state: "output-available" as const,
      input: {},
      output: `ran ${id}`,
    });
    const session = auditSession();
    const message = { ...session.messages[2]!, parts: [tool(`call_${a}`, 1), tool(`call_${b}`, 2), tool(`call_${a}`, 3)] };
    const { session: safe } = prepareExport({ ...session, messages: [message] }, { redact: true });
    const ids = safe.messages[0]!.parts.map((p) => (p as { tool_call_id: string }).tool_call_id);
    expect(ids[0]).toBe(ids[2]);
    expect(ids[0]).not.toBe(ids[1]);
    // The output naming the id names it with the id's own placeholder.
    expect((safe.messages[0]!.parts[0] as { output: string }).output).toBe(`ran ${ids[0]}`);
  });

  it("every detector has a planted secret that it finds", () => {
    const found = new Set(plantAll(7).flatMap((p) => redactText(p.text).findings.map((f) => f.detector)));
    expect([...found].sort()).toEqual(REDACTION_DETECTORS.map((d) => d.name).sort());
  });
});

describe("redaction audit: each drop flag removes its data from every format", () => {
  const cases: [keyof ExportOptions, string[]][] = [
    ["dropSystemPrompt", ["SYSTEM-MARKER"]],
    ["dropToolOutputs", ["TOOL-OUTPUT-MARKER", "TOOL-ERROR-MARKER"]],
    ["dropFileData", ["FILE-DATA-MARKER", PNG_1X1, base64Of(MARKERS.fileText)]],
    ["dropProviderContext", ["PROVIDER-CONTEXT-MARKER"]],
    ["dropMetadata", ["METADATA-MARKER", "CACHE-KEY-MARKER"]],
    ["dropReasoning", ["REASONING-MARKER", "REASONING-SUMMARY-MARKER"]],
  ];
  const seen = (output: Output, marker: string): boolean => readableViews(output.bytes).some((view) => view.includes(marker));

  it.each(cases)("%s", (flag, markers) => {
    const without = outputsOf(prepareExport(sessionWith(), {}).session);
    const withFlag = outputsOf(prepareExport(sessionWith(), { [flag]: true }).session);
    for (const marker of markers) {
      // The portable JSON always carries the data when the flag is off (the marker is real) …
      expect(seen(without[0]!, marker), `${marker} without ${flag}`).toBe(true);
      // … and no output has it with the flag on.
      for (const output of withFlag) expect(seen(output, marker), `${marker} in ${output.name}`).toBe(false);
    }
  });

  it("every format still carries the data the flag does not cover", () => {
    const outputs = outputsOf(prepareExport(sessionWith(), { dropFileData: true, dropProviderContext: true }).session);
    for (const output of outputs) {
      expect(seen(output, "USER-TEXT-MARKER"), output.name).toBe(true);
      expect(seen(output, "TOOL-OUTPUT-MARKER"), output.name).toBe(true);
    }
  });
});
