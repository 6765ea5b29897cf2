/**
 * Compares sessionfold's redaction detectors (core/export/detectors.ts) with secretlint's
 * recommended rule preset on one corpus, and prints the tables docs/decisions.md quotes.
 *
 * - Planted: every kind of test/export/secrets.ts, 50 different secrets each (seeds 1–50),
 *   in the context the audit plants them in. A kind is found when every sensitive part of the
 *   planted text is gone (ours) or inside a reported range (secretlint).
 * - Clean: text with no real secret: this repository's docs and the README and type
 *   declarations of the packages under node_modules (sorted, the first 2 MB). Every finding
 *   there is a false positive (or a sample key in documentation).
 *
 * Run: `node test/bench/install.mjs && npx tsx test/bench/redaction-compare.ts` (secretlint
 * is a dependency of test/bench only; it is not part of the package).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { lintSource } from "@secretlint/core";
import { creator as recommended } from "@secretlint/secretlint-rule-preset-recommend";
import { findSecrets } from "../../core/export/redact.ts";
import { plantAll } from "../export/secrets.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SEEDS = 50;
const CLEAN_BYTES = 2 * 1024 * 1024;

async function secretlintRanges(content: string): Promise<{ rule: string; range: readonly [number, number] }[]> {
  const result = await lintSource({
    source: { filePath: "/corpus.txt", content, contentType: "text" },
    options: { config: { rules: [{ id: "@secretlint/secretlint-rule-preset-recommend", rule: recommended }] }, noPhysicFilePath: true },
  });
  return result.messages.map((m) => ({ rule: m.ruleId.replace("@secretlint/secretlint-rule-", ""), range: m.range }));
}

/** Where each sensitive part lies in `text` (every occurrence). */
function occurrences(text: string, secret: string): [number, number][] {
  const out: [number, number][] = [];
  for (let at = text.indexOf(secret); at >= 0; at = text.indexOf(secret, at + 1)) out.push([at, at + secret.length]);
  return out;
}

const covered = (spans: readonly (readonly [number, number])[], [start, end]: readonly [number, number]) => spans.some(([s, e]) => s <= start && e >= end);

async function planted(): Promise<void> {
  const byKind = new Map<string, { ours: number; secretlint: number; rules: Set<string> }>();
  for (let seed = 1; seed <= SEEDS; seed++) {
    for (const plant of plantAll(seed)) {
      const row = byKind.get(plant.kind) ?? { ours: 0, secretlint: 0, rules: new Set<string>() };
      byKind.set(plant.kind, row);
      const ours = findSecrets(plant.text).spans.map((s) => [s.start, s.end] as const);
      const theirs = await secretlintRanges(plant.text);
      const parts = plant.secrets.flatMap((secret) => occurrences(plant.text, secret));
      if (parts.every((part) => covered(ours, part))) row.ours += 1;
      if (parts.every((part) => covered(theirs.map((t) => t.range), part))) row.secretlint += 1;
      for (const t of theirs) row.rules.add(t.rule);
    }
  }
  console.log(`\nPlanted secrets (${SEEDS} of each kind): how many were fully covered`);
  console.log("| kind | sessionfold | secretlint recommend | secretlint rules that fired |");
  console.log("| --- | ---: | ---: | --- |");
  let ours = 0;
  let theirs = 0;
  for (const [kind, row] of byKind) {
    console.log(`| ${kind} | ${row.ours} | ${row.secretlint} | ${[...row.rules].join(", ") || "—"} |`);
    ours += row.ours;
    theirs += row.secretlint;
  }
  console.log(`| all ${byKind.size} kinds | ${ours} / ${byKind.size * SEEDS} | ${theirs} / ${byKind.size * SEEDS} | |`);
}

function cleanFiles(): string[] {
  const files = readdirSync(join(ROOT, "docs")).filter((n) => n.endsWith(".md")).map((n) => join(ROOT, "docs", n));
  const modules: string[] = [];
  const walk = (dir: string, depth: number) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const info = statSync(path, { throwIfNoEntry: false });
      if (!info) continue;
      if (info.isDirectory() && depth < 4 && name !== ".bin" && name !== "test" && name !== "tests") walk(path, depth + 1);
      else if (info.isFile() && (name === "README.md" || name.endsWith(".d.ts")) && info.size < 200_000) modules.push(path);
    }
  };
  walk(join(ROOT, "node_modules"), 0);
  let total = files.reduce((sum, f) => sum + statSync(f).size, 0);
  for (const file of modules) {
    if (total >= CLEAN_BYTES) break;
    files.push(file);
    total += statSync(file).size;
  }
  return files;
}

async function clean(): Promise<void> {
  const files = cleanFiles();
  const ours = new Map<string, number>();
  const theirs = new Map<string, number>();
  let bytes = 0;
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    bytes += Buffer.byteLength(text);
    for (const span of findSecrets(text).spans) ours.set(span.detector, (ours.get(span.detector) ?? 0) + 1);
    for (const finding of await secretlintRanges(text)) theirs.set(finding.rule, (theirs.get(finding.rule) ?? 0) + 1);
  }
  const list = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(", ") || "none";
  console.log(
    `\nClean corpus: ${files.length} files, ${(bytes / 1024 / 1024).toFixed(2)} MB (docs/*.md, then README.md and .d.ts files of node_modules, sorted; e.g. ${
      relative(ROOT, files.at(-1)!)
    })`,
  );
  console.log(`| | findings | by detector / rule |`);
  console.log(`| --- | ---: | --- |`);
  console.log(`| sessionfold | ${[...ours.values()].reduce((a, b) => a + b, 0)} | ${list(ours)} |`);
  console.log(`| secretlint recommend | ${[...theirs.values()].reduce((a, b) => a + b, 0)} | ${list(theirs)} |`);
}

await planted();
await clean();
