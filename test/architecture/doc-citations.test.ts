/**
 * A code comment that cites a doc's section by name (`docs/FORMAT.md "Fencing"`) names one the
 * doc has: a heading that begins with the cited words (a long one may be cut short with `…`), or
 * a paragraph's bold label (`**Fencing**`, `- **Ids.**`). A section renamed without its
 * citations sends a reader of the code to nothing.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const SOURCE_FOLDERS = ["core", "runtime-node", "runtime-browser", "runtime-postgres", "ai-sdk", "testing", "demo", "scripts", "test"];

function sourceFiles(folder: string): string[] {
  return readdirSync(join(REPO, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && /\.(ts|tsx|mjs|js)$/.test(entry.name) && !entry.parentPath.includes("node_modules"))
    .map((entry) => join(entry.parentPath, entry.name));
}

const sections = new Map<string, string[]>();
function sectionsOf(doc: string): string[] {
  let names = sections.get(doc);
  if (!names) {
    const text = readFileSync(join(REPO, "docs", doc), "utf8");
    names = [...text.matchAll(/^#{1,6} (.+)$/gm), ...text.matchAll(/\*\*([^*]+?)\*\*/g)].map((match) => match[1]!.replace(/\s+/g, " ").trim());
    sections.set(doc, names);
  }
  return names;
}

it("every section a comment cites by name is one its doc has", () => {
  const dangling: string[] = [];
  let citations = 0;
  for (const file of SOURCE_FOLDERS.flatMap(sourceFiles)) {
    // A citation wrapped across a comment's lines is read as one line.
    const text = readFileSync(file, "utf8").replace(/\n\s*(?:\*|\/\/)\s*/g, " ");
    for (const [citation, doc, section] of text.matchAll(/docs\/([A-Za-z]+\.md) "([^"\n]+)"/g)) {
      citations += 1;
      const cited = section!.replace(/,? …$/, ""); // a long title cut short
      if (!sectionsOf(doc!).some((name) => name.startsWith(cited))) dangling.push(`${file.slice(REPO.length)}: ${citation}`);
    }
  }
  expect(citations).toBeGreaterThan(100);
  expect(dangling).toEqual([]);
});
