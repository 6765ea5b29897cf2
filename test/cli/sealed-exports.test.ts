/**
 * Sealed exports on the command line (docs/FORMAT.md "Sealed exports"): `import` opens one with
 * the first line of --passphrase-file and reads the file it holds (its format detected);
 * without a passphrase it is key-required, with a wrong one wrong-key (exit 4), and nothing is
 * created. `export --passphrase-file` writes one that holds none of the session's text.
 */
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { sealExport } from "../../core/mod.ts";
import { cli, expectOk, json, missingRoot, REPO, snapshot, tempDir } from "./support.ts";

const FIXTURES = join(REPO, "test/formats/fixtures");

async function sealedFixture(dir: string, fixture: string, passphrase: string): Promise<string> {
  const file = join(dir, "export.sealed.json");
  await writeFile(file, await sealExport(await readFile(join(FIXTURES, fixture)), passphrase));
  return file;
}

describe("import of a sealed export", () => {
  it("opens it with the passphrase file's first line and imports what it holds", async () => {
    const dir = await tempDir();
    const root = await missingRoot();
    const file = await sealedFixture(dir, "rho/snapshot-v2.json", "export harbour words");
    const passphrase = join(dir, "passphrase.txt");
    await writeFile(passphrase, "export harbour words\n");
    const result = expectOk(await cli(root, ["--json", "import", file, "--passphrase-file", passphrase, "--into", "a1/w1/sealed"]));
    expect(json(result)).toMatchObject({ session_id: "sealed", revision: 9, detected: { format: "rho-snapshot" } });
    expect(result.stderr).toContain("opened the sealed export; detected rho-snapshot");
    const direct = json(expectOk(await cli(root, ["--json", "import", join(FIXTURES, "rho/snapshot-v2.json"), "--into", "a1/w1/direct"])));
    // The same messages as the file imported in the clear (a snapshot has no times: each import stamps its own).
    const content = async (ref: string) =>
      json<{ role: string; parts: unknown[] }[]>(expectOk(await cli(root, ["--json", "messages", ref]))).map(({ role, parts }) => ({ role, parts }));
    const messages = await content("a1/w1/sealed");
    expect(messages).toEqual(await content("a1/w1/direct"));
    expect(messages.length).toBe(direct.message_count);
  });

  it("is key-required without a passphrase and wrong-key with another; nothing is created", async () => {
    const dir = await tempDir();
    const root = await missingRoot();
    const file = await sealedFixture(dir, "deepcode/v1/7f3a.v1.jsonl", "right words");
    const before = await snapshot(root);
    const missing = await cli(root, ["import", file, "--into", "a1/w1/s"]);
    expect(missing.status).toBe(4);
    expect(missing.stderr).toMatch(/^error\[key-required\]: export\.sealed\.json is a sealed export: give its passphrase with --passphrase-file FILE/);
    const wrong = join(dir, "wrong.txt");
    await writeFile(wrong, "wrong words\n");
    const refused = await cli(root, ["import", file, "--passphrase-file", wrong, "--into", "a1/w1/s"]);
    expect(refused.status).toBe(4);
    expect(refused.stderr).toMatch(/^error\[wrong-key\]: export\.sealed\.json: the passphrase does not open this sealed export/);
    expect(await snapshot(root)).toEqual(before);
    // The right one: a DeepCode v1 stream inside, detected by its first line.
    const right = join(dir, "right.txt");
    await writeFile(right, "right words");
    expect(json(expectOk(await cli(root, ["--json", "import", file, "--passphrase-file", right, "--into", "a1/w1/s"])))).toMatchObject({
      detected: { format: "deepcode" },
    });
  });

  it("refuses a passphrase file for a file that is not sealed", async () => {
    const dir = await tempDir();
    const root = await missingRoot();
    const passphrase = join(dir, "passphrase.txt");
    await writeFile(passphrase, "words\n");
    const result = await cli(root, ["import", join(FIXTURES, "rho/snapshot-v2.json"), "--passphrase-file", passphrase, "--into", "a1/w1/s"]);
    expect(result.status).toBe(4);
    expect(result.stderr).toMatch(/^error\[invalid-input\]: snapshot-v2\.json: --passphrase-file was given, but the file is not a sealed export/);
  });

  it("export --passphrase-file seals the export; import opens it to the same messages", async () => {
    const dir = await tempDir();
    const root = await missingRoot();
    const planted = "planted-cli-text: the lighthouse key is under the third stone";
    expectOk(await cli(root, ["new", "a1/w1/src"]));
    expectOk(await cli(root, ["append", "a1/w1/src", "--role", "user", "--text", planted]));
    const passphrase = join(dir, "passphrase.txt");
    await writeFile(passphrase, "lighthouse words\n");
    const out = join(dir, "src.sealed.json");
    expect(json(expectOk(await cli(root, ["--json", "export", "a1/w1/src", "--to", "deepcode", "--cwd", "/p", "--out", out, "--passphrase-file", passphrase]))))
      .toMatchObject({ out, records: 2 });
    const sealed = await readFile(out, "utf8");
    expect(JSON.parse(sealed)).toMatchObject({ format: "sessionfold-sealed-export", version: 1 });
    expect(sealed).not.toContain("lighthouse");
    const stdout = expectOk(await cli(root, ["export", "a1/w1/src", "--to", "rho-snapshot", "--passphrase-file", passphrase])).stdout;
    expect(JSON.parse(stdout)).toMatchObject({ format: "sessionfold-sealed-export" });
    expect(stdout).not.toContain("lighthouse");
    expect(json(expectOk(await cli(root, ["--json", "import", out, "--passphrase-file", passphrase, "--into", "a1/w1/back"])))).toMatchObject({
      message_count: 1,
      detected: { format: "deepcode" },
    });
    const texts = json<{ parts: { text?: string }[] }[]>(expectOk(await cli(root, ["--json", "messages", "a1/w1/back"]))).map((m) => m.parts[0]?.text);
    expect(texts).toEqual([planted]);
  });
});
