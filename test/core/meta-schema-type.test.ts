import { describe, expect, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import { ProviderIdentity, SessionMeta } from "../../core/mod.ts";

/**
 * The zod schemas carry explicit type annotations (docs/decisions.md, "No slow types"). The
 * typecheck catches an annotation naming a key the schema lacks, but not a key the schema
 * has and the annotation leaves out: it would parse and vanish from the type. Here the keys
 * of the annotated (inferred) type are listed by a record the compiler holds to exactly those
 * keys, and compared with the keys the schema really has at run time.
 */
type Meta = z.infer<typeof SessionMeta>;
const annotatedKeys: { [K in keyof Meta as string extends K ? never : K]-?: true } = {
  schema_version: true,
  session_id: true,
  agent_id: true,
  workspace_id: true,
  title: true,
  model_label: true,
  created_at: true,
  updated_at: true,
  message_count: true,
  history_bytes: true,
  timezone: true,
  revision: true,
  forked_from: true,
  compaction: true,
  provider: true,
};

describe("meta.json schema type", () => {
  it("the annotated type has exactly the keys the schema parses", () => {
    expect(Object.keys(SessionMeta.shape).sort()).toEqual(Object.keys(annotatedKeys).sort());
  });

  it("provider is an optional provider identity in both the input and the output type", () => {
    expectTypeOf<Meta["provider"]>().toEqualTypeOf<ProviderIdentity | undefined>();
    expectTypeOf<z.input<typeof SessionMeta>["provider"]>().toEqualTypeOf<z.input<typeof ProviderIdentity> | undefined>();
    const meta = SessionMeta.parse({
      schema_version: 1,
      session_id: "s",
      agent_id: "a",
      workspace_id: "w",
      created_at: "2026-12-02T13:00:00.000Z",
      updated_at: "2026-12-02T13:00:00.000Z",
      message_count: 0,
      history_bytes: 0,
      revision: 0,
      provider: { provider: "openai", api: "responses", model: "gpt-5" },
    });
    expect(meta.provider).toEqual({ provider: "openai", api: "responses", model: "gpt-5" });
    expect(SessionMeta.safeParse({ ...meta, provider: { provider: "openai" } }).success).toBe(false);
  });
});
