/**
 * The public surface is a reviewed artifact: `docs/api/*.api.md` lists every exported name
 * and signature of each package entry point, and this test fails until a change to the
 * surface is written there on purpose (`npm run api-report`).
 */
import { describe, expect, it } from "vitest";
import { entries, renderReports, reportName, staleReports } from "../../scripts/api-report.ts";

describe("API report", () => {
  const reports = renderReports();

  it("covers every typed entry point of package.json", () => {
    expect([...reports.keys()].sort()).toEqual(entries().map(reportName).sort());
  });

  it("matches docs/api/ (run `npm run api-report` and review the diff when the surface changes on purpose)", () => {
    expect(staleReports(reports)).toEqual([]);
  });

  it("lists names with signatures", () => {
    const core = reports.get("sessionfold.api.md")!;
    expect(core).toContain("class Sessions {");
    expect(core).toContain("function applyCommitPlanByCalls(storage: StoragePort, plan: CommitPlan): Promise<CommitPlanResult>");
    // Internals stay out of the public surface.
    for (const internal of ["SessionState", "LockedOperation", "runLoop", "BATCH_FIELD", "ERROR_TRANSFER_HANDLER", "decodeUtf8"]) {
      expect(core).not.toMatch(new RegExp(`\\b(?:const|function|class|interface|type) ${internal}\\b`));
    }
  });

  it("a public signature names only exported types (DraftFlushOptions is exported; the internal LockedOperation appears nowhere)", () => {
    const core = reports.get("sessionfold.api.md")!;
    expect(core).toMatch(/interface DraftFlushOptions \{/);
    expect(core).not.toMatch(/\bLockedOperation\b/);
  });
});
