/**
 * The rows of case 14 (listing at scale), one shape for every backend.
 *
 * @module
 */
import type { CaseContext } from "./result.ts";
import { sizeLabel } from "./synth.ts";

/** Emits `list.<backend>.n=1e4`: every session of the workspace, against the same listing without the catalog. */
export function emitListAll(
  ctx: CaseContext,
  backend: string,
  value: number,
  baseline: number,
  runs: number,
  note: string,
): void {
  ctx.emit({
    case: 14,
    name: `list.${backend}.n=1e4`,
    value,
    unit: "ms",
    baseline,
    baselineName: "the same listing from every meta.json (no catalog)",
    ratio: value / baseline,
    ratioMeaning: "value / baseline",
    target: { on: "value", op: "<=", limit: 50, text: "≤ 50 ms" },
    runs,
    note,
  });
}

/** Emits `list.<backend>.flatness`: the first page at the largest size against the smallest. */
export function emitFlatness(
  ctx: CaseContext,
  backend: string,
  page: Map<number, number>,
  runs: number,
  what: string,
): void {
  const sizes = [...page.keys()].sort((a, b) => a - b);
  const lo = sizes[0]!;
  const hi = sizes.at(-1)!;
  ctx.emit({
    case: 14,
    name: `list.${backend}.flatness`,
    value: page.get(hi)!,
    unit: "ms",
    baseline: page.get(lo)!,
    baselineName: `the same page at n=${sizeLabel(lo)} sessions`,
    ratio: page.get(hi)! / page.get(lo)!,
    ratioMeaning: `time at n=${sizeLabel(hi)} / time at n=${sizeLabel(lo)} sessions`,
    target: { op: "<=", limit: 1.5, text: "≤ 1.5" },
    runs,
    note: `${what}; ${
      sizes.map((n) => `n=${sizeLabel(n)}: ${page.get(n)!.toFixed(2)} ms`).join(
        ", ",
      )
    }`,
  });
}
