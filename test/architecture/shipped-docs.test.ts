/**
 * The docs the package ships (package.json `files`) link only to what it ships: a relative
 * link from one of them to a doc left out of the tarball is dead for every user who reads
 * it in `node_modules/sessionfold/docs/` (docs/decisions.md "The package ships the docs its
 * docs link to"). A link's `#anchor` must name a heading of its target. The README, which
 * every package ships, too, checked against the file list `npm pack` itself gives: it
 * linked `docs/BENCHMARKS.md` and its screenshot, which the tarball left out.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const REPO = fileURLToPath(new URL("../..", import.meta.url));

const files = (JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { files: string[] }).files;
const shippedDocs = files.filter((file) => /^docs\/.*\.md$/.test(file));

/** GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replace(/ /g, "-");
}

function anchorsOf(doc: string): Set<string> {
  const text = readFileSync(join(REPO, doc), "utf8");
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((match) => anchorOf(match[1]!)));
}

/** The relative links of `doc` that name no file of `shipped`, or no heading of a Markdown file they name. */
function deadLinks(doc: string, shipped: readonly string[], where: string): string[] {
  const dead: string[] = [];
  const text = readFileSync(join(REPO, doc), "utf8");
  for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z]+:/.test(target!) || target!.startsWith("#")) continue;
    const [path, anchor] = target!.split("#") as [string, string | undefined];
    const file = normalize(join(dirname(doc), path)).replaceAll("\\", "/");
    if (!shipped.includes(file)) dead.push(`${doc} -> ${target}: ${file} is not in ${where}`);
    else if (anchor !== undefined && !anchorsOf(file).has(anchor)) dead.push(`${doc} -> ${target}: ${file} has no such heading`);
  }
  return dead;
}

it("every relative link of a shipped doc names a shipped file, and a heading of it when it has an #anchor", () => {
  expect(shippedDocs).toContain("docs/FORMAT.md");
  expect(shippedDocs.flatMap((doc) => deadLinks(doc, files, 'package.json "files"'))).toEqual([]);
});

it("every relative link of README.md names a file the tarball holds (npm pack --dry-run), and a heading of it when it has an #anchor", () => {
  // --ignore-scripts: the listing without `prepack`'s build (README links to no built file).
  const listing = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
    cwd: REPO,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  });
  const [pack] = JSON.parse(listing.slice(listing.indexOf("["))) as { files: { path: string }[] }[];
  const packed = pack!.files.map((file) => file.path);
  expect(packed).toContain("README.md");
  expect(readFileSync(join(REPO, "README.md"), "utf8")).toMatch(/\]\(docs\/BENCHMARKS\.md\)/);
  expect(deadLinks("README.md", packed, "the tarball")).toEqual([]);
});
