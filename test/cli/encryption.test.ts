/**
 * The CLI on an encrypted store (docs/FORMAT.md "Encrypted stores", docs/CLI.md): `keygen`
 * writes a 0600 key file, `--key-file` / `SESSIONFOLD_KEY_FILE` opens the store, and without it
 * or with another key every command fails with `key-required` / `wrong-key` (exit 4) and
 * changes nothing; `rekey` rotates and the old key is no longer needed.
 */
import { readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, expectOk, json, missingRoot, snapshot, tempDir } from "./support.ts";

const REF = "a1/w1/s1";
const SECRET = "the launch code is 0000";

async function encryptedStore() {
  const dir = await tempDir();
  const root = await missingRoot();
  const keyFile = join(dir, "store.key");
  const made = json<{ file: string; kid: string }>(expectOk(await cli(root, ["--json", "keygen", "--out", keyFile])));
  expect(made.file).toBe(keyFile);
  expectOk(await cli(root, ["--key-file", keyFile, "new", REF, "--title", `title: ${SECRET}`]));
  expectOk(await cli(root, ["--key-file", keyFile, "append", REF, "--role", "user", "--text", SECRET]));
  return { dir, root, keyFile, kid: made.kid };
}

/** Every byte of every file under `root`, as one string. */
async function allBytes(root: string): Promise<string> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  const files = entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
  return (await Promise.all(files.map((file) => readFile(file, "utf8")))).join("\n");
}

describe("an encrypted store on the command line", () => {
  it("keygen writes a 0600 key file and never overwrites one", async () => {
    const { root, keyFile } = await encryptedStore();
    expect((await stat(keyFile)).mode & 0o777).toBe(0o600);
    const before = await readFile(keyFile, "utf8");
    const again = await cli(root, ["keygen", "--out", keyFile]);
    expect(again.status).toBe(4);
    expect(await readFile(keyFile, "utf8")).toBe(before);
  });

  it("reads back with the key file (option or environment); no planted text on disk", async () => {
    const { root, keyFile } = await encryptedStore();
    const shown = json<{ messages: { parts: { text?: string }[] }[] }>(expectOk(await cli(root, ["--key-file", keyFile, "--json", "messages", REF])));
    expect(JSON.stringify(shown)).toContain(SECRET);
    expectOk(await cli(root, ["verify", REF], { env: { SESSIONFOLD_KEY_FILE: keyFile } }));
    const stored = await allBytes(root);
    expect(stored).toContain('"sealed":1');
    expect(stored).not.toContain("launch code");
  });

  it("without a key, or with another key: key-required / wrong-key, exit 4, nothing changed", async () => {
    const { dir, root } = await encryptedStore();
    const before = await snapshot(root);
    for (const argv of [["ls"], ["show", REF], ["verify"], ["append", REF, "--role", "user", "--text", "x"]]) {
      const result = await cli(root, argv);
      expect(result.status, argv.join(" ")).toBe(4);
      expect(result.stderr).toMatch(/^error\[key-required\]: /);
    }
    const other = join(dir, "other.key");
    expectOk(await cli(root, ["keygen", "--out", other]));
    const wrong = await cli(root, ["--key-file", other, "append", REF, "--role", "user", "--text", "x"]);
    expect(wrong.status).toBe(4);
    expect(wrong.stderr).toMatch(/^error\[wrong-key\]: /);
    expect(await snapshot(root)).toEqual(before);
  });

  it("rekey rotates to a new key; the store then opens with the new key alone", async () => {
    const { root, keyFile, kid } = await encryptedStore();
    const report = json<{ kid: string; previous_kid: string; sessions: number; data_keys: number }>(
      expectOk(await cli(root, ["--key-file", keyFile, "--json", "rekey"])),
    );
    expect(report).toMatchObject({ previous_kid: kid, sessions: 1, data_keys: 1 });
    const file = JSON.parse(await readFile(keyFile, "utf8")) as { current: string; keys: Record<string, string> };
    expect(file.current).toBe(report.kid);
    expect((await stat(keyFile)).mode & 0o777).toBe(0o600);
    // Retire the old key: the store opens with the new one alone.
    delete file.keys[kid];
    await writeFile(keyFile, JSON.stringify(file), { mode: 0o600 });
    expectOk(await cli(root, ["--key-file", keyFile, "append", REF, "--role", "assistant", "--text", "after rekey"]));
    expect(JSON.stringify(json(expectOk(await cli(root, ["--key-file", keyFile, "--json", "messages", REF]))))).toContain(SECRET);
  });

  it("encrypt seals a store in the clear in place; afterwards it needs its key", async () => {
    const dir = await tempDir();
    const root = await missingRoot();
    const keyFile = join(dir, "store.key");
    expectOk(await cli(root, ["new", REF, "--title", "plain"]));
    expectOk(await cli(root, ["append", REF, "--role", "user", "--text", SECRET]));
    expect(await allBytes(root)).toContain("launch code");
    expectOk(await cli(root, ["keygen", "--out", keyFile]));
    // A key given to a store that holds plaintext sessions is refused: that is what encrypt is for.
    expect((await cli(root, ["--key-file", keyFile, "ls"])).status).toBe(4);
    expect(json(expectOk(await cli(root, ["--key-file", keyFile, "--json", "encrypt"])))).toMatchObject({ sessions: 1 });
    expect(await allBytes(root)).not.toContain("launch code");
    expect((await cli(root, ["ls"])).stderr).toMatch(/^error\[key-required\]: /);
    expect(JSON.stringify(json(expectOk(await cli(root, ["--key-file", keyFile, "--json", "messages", REF]))))).toContain(SECRET);
  });
});
