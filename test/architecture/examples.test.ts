/**
 * Every function and class a package entry point exports shows its use in an `@example`,
 * which `npm run check:deno` (`deno check --doc-only`) type-checks: a new export without
 * one fails here, an example that no longer compiles fails there.
 */
import { describe, expect, it } from "vitest";
import { documentedSymbols, missingExamples } from "../../scripts/api-report.ts";

describe("examples", () => {
  const symbols = documentedSymbols();

  it("sees the exported functions and classes of every entry point (sanity)", () => {
    const names = [...symbols.values()].flat().filter((s) => s.declarations.some((d) => d.kind === "function" || d.kind === "class")).map((s) => s.name);
    expect(names).toContain("Sessions");
    expect(names).toContain("openNodeSessions");
    expect(names).toContain("runStorageTests");
    expect(names.length).toBeGreaterThan(100);
  });

  it("has an @example on every exported function and class", () => {
    expect(missingExamples(symbols)).toEqual([]);
  });

  it("notices a declaration without one", () => {
    const [entry] = symbols.keys();
    const bare = { name: "undocumented", declarations: [{ kind: "function", jsDoc: { tags: [{ kind: "param" }] } }] };
    expect(missingExamples(new Map([[entry!, [bare]]]))).toEqual([`${entry!.specifier}: undocumented`]);
  });
});
