/**
 * The docs the package ships (package.json `files`) link only to what it ships: a relative
 * link from one of them to a doc left out of the tarball is dead for every user who reads
 * it in `node_modules/sessionfold/docs/` (docs/decisions.md "The package ships the docs its
 * docs link to"). A link's `#anchor` must name a heading of its target.
 */
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

it("every relative link of a shipped doc names a shipped file, and a heading of it when it has an #anchor", () => {
  expect(shippedDocs).toContain("docs/FORMAT.md");
  const dead: string[] = [];
  for (const doc of shippedDocs) {
    const text = readFileSync(join(REPO, doc), "utf8");
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!) || target!.startsWith("#")) continue;
      const [path, anchor] = target!.split("#") as [string, string | undefined];
      const file = normalize(join(dirname(doc), path)).replaceAll("\\", "/");
      if (!files.includes(file)) dead.push(`${doc} -> ${target}: ${file} is not in package.json "files"`);
      else if (anchor !== undefined && !anchorsOf(file).has(anchor)) dead.push(`${doc} -> ${target}: ${file} has no such heading`);
    }
  }
  expect(dead).toEqual([]);
});
