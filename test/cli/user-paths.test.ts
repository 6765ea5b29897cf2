/**
 * The paths a user gives the CLI, checked before anything is written (docs/CLI.md "Files the
 * CLI writes"): an `--out` target (export, keygen) inside the store is refused however it is
 * spelled (`..`, a linked folder); an `--out` whose folder is missing, a folder as the target
 * and a file where its folder belongs are typed errors (exit 4) naming the path the user gave,
 * never a temporary file, and leave nothing behind; a store root that is a file is said to be
 * one (exit 4), by readers and writers alike.
 */
import { statSync } from "node:fs";
import { chmod, chown, mkdir, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { InvalidInputError, StorageError } from "../../core/errors.ts";
import { writeExportFile } from "../../runtime-node/cli/write-out.ts";
import { bin, type ChildUser, cli, cliRaw, expectOk, json, missingRoot, seed, sessionDir, snapshot, tempDir } from "./support.ts";

const REF = "coder/repo/s3b";
const ERROR_LINE = /^error\[[a-z-]+\]: \S.*\n$/;

/** A store with one session of two messages, and its bytes before the command under test. */
async function storeWithSession() {
  const root = await missingRoot();
  await seed(root, REF, 2);
  return { root, session: sessionDir(root, REF), before: await snapshot(root) };
}

describe("--out inside the store is refused before anything is written", () => {
  it("export over meta.json (a real process, as the acceptance pass found it): exit 4, the store unchanged, the session still opens", async () => {
    const { root, session, before } = await storeWithSession();
    const target = join(session, "meta.json");
    const result = await bin(["--root", root, "export", REF, "--to", "rho-snapshot", "--out", target]);
    expect(result.status).toBe(4);
    expect(result.stderr).toMatch(ERROR_LINE);
    expect(result.stderr).toContain(`error[invalid-input]: --out ${target}: inside the store ${root}`);
    expect(await snapshot(root)).toEqual(before);
    expectOk(await bin(["--root", root, "show", REF]));
  });

  it.each([
    ["deepcode", "messages/active.jsonl"],
    ["pi", "meta.json"],
    ["rho-snapshot", "messages/new-file.json"],
  ])("export --to %s over %s, and through `..`", async (format, file) => {
    const { root, session, before } = await storeWithSession();
    const outside = await tempDir();
    for (const target of [join(session, file), `${outside}/../${relative(join(outside, ".."), join(session, file))}`]) {
      const result = await cli(root, ["--json", "export", REF, "--to", format, "--cwd", "/repo", "--out", target]);
      expect(result.status).toBe(4);
      expect(json(result)).toMatchObject({ error: { code: "invalid-input", out: target, store: root, resolved: join(session, file) } });
    }
    expect(await snapshot(root)).toEqual(before);
  });

  it("through a folder outside the store that is a link into it, and the root itself", async () => {
    const { root, session, before } = await storeWithSession();
    const outside = await tempDir();
    await symlink(session, join(outside, "linked"));
    const viaLink = await cli(root, ["export", REF, "--to", "pi", "--cwd", "/repo", "--out", join(outside, "linked/meta.json")]);
    expect(viaLink.status).toBe(4);
    expect(viaLink.stderr).toBe(
      `error[invalid-input]: --out ${join(outside, "linked/meta.json")}: inside the store ${root} (it is ${
        join(session, "meta.json")
      }); a command never writes its output under the store; nothing was written\n`,
    );
    expect((await cli(root, ["export", REF, "--to", "pi", "--cwd", "/repo", "--out", root])).status).toBe(4);
    expect(await snapshot(root)).toEqual(before);
  });

  it("`..` after a link goes up from the link's target, as the system opens it: a link outside to a folder of the store, then `..`", async () => {
    const { root, session, before } = await storeWithSession();
    const outside = await tempDir();
    await symlink(join(session, "messages"), join(outside, "link"));
    const target = `${outside}/link/../stolen.json`;
    for (const argv of [["export", REF, "--to", "pi", "--cwd", "/repo"], ["export", REF, "--to", "deepcode", "--cwd", "/repo"], ["keygen"]]) {
      const result = await cli(root, ["--json", ...argv, "--out", target]);
      expect(result.status, argv.join(" ")).toBe(4);
      expect(json(result)).toMatchObject({ error: { code: "invalid-input", out: target, store: root, resolved: join(session, "stolen.json") } });
    }
    expect(await snapshot(root)).toEqual(before);
    expect(await readdir(outside)).toEqual(["link"]);
  });

  it("outside the store, the file lands where the system puts it (beside the link's target), and a relative --out the same", async () => {
    const { root } = await storeWithSession();
    const [outside, elsewhere] = [await tempDir(), await tempDir()];
    await mkdir(join(elsewhere, "sub"));
    await symlink(join(elsewhere, "sub"), join(outside, "link"));
    // DeepCode's writer lock is looked for beside the stream too: one held there refuses the export.
    await writeFile(join(elsewhere, "s3b.writer.lock"), "{}");
    expect((await cli(root, ["export", REF, "--to", "deepcode", "--cwd", "/repo", "--out", `${outside}/link/../s3b.v1.jsonl`])).status).toBe(3);
    await rm(join(elsewhere, "s3b.writer.lock"));
    expect(json(expectOk(await cli(root, ["--json", "export", REF, "--to", "deepcode", "--cwd", "/repo", "--out", `${outside}/link/../s3b.v1.jsonl`]))))
      .toMatchObject({ out: `${outside}/link/../s3b.v1.jsonl` });
    expectOk(await cli(root, ["keygen", "--out", "./link/../store.key"], { cwd: outside }));
    expect((await readdir(elsewhere)).sort()).toEqual(["s3b.v1.jsonl", "store.key", "sub"]);
    expect(await readdir(outside)).toEqual(["link"]);
  });

  it("keygen into the store (a folder there, or a new file) is refused the same way", async () => {
    const { root, session, before } = await storeWithSession();
    for (const target of [join(root, "store.key"), join(session, "key")]) {
      const result = await cli(root, ["keygen", "--out", target]);
      expect(result.status).toBe(4);
      expect(result.stderr).toContain(`error[invalid-input]: --out ${target}: inside the store ${root}`);
    }
    expect(await snapshot(root)).toEqual(before);
  });

  it("a file beside the store whose name starts like it is not inside it", async () => {
    const { root } = await storeWithSession();
    const beside = `${root}-export.json`;
    expect(json(expectOk(await cli(root, ["--json", "export", REF, "--to", "rho-snapshot", "--out", beside])))).toEqual({ out: beside, records: 2 });
    expectOk(await cli(root, ["keygen", "--out", `${root}.key`]));
  });
});

describe("--root, SESSIONFOLD_HOME, --key-file and a folder --remote with `..` after a link: the folder the system opens, as --out", () => {
  /** `base/link` is a link to `base/real/inner`: `base/link/..` is `base/real` to the system, `base` folded as text. */
  async function linkedBase(): Promise<string> {
    const base = await tempDir();
    await mkdir(join(base, "real", "inner"), { recursive: true });
    await symlink(join(base, "real", "inner"), join(base, "link"));
    return base;
  }

  it("--root and SESSIONFOLD_HOME: the store is written, and read, under the link's target's parent", async () => {
    const base = await linkedBase();
    expectOk(await cliRaw(["--root", `${base}/link/../store`, "new", REF]));
    expectOk(await cliRaw(["new", REF], { cwd: base, env: { SESSIONFOLD_HOME: "link/../home" } }));
    expect((await readdir(base)).sort()).toEqual(["link", "real"]);
    expect((await readdir(join(base, "real"))).sort()).toEqual(["home", "inner", "store"]);
    expect(json(expectOk(await cliRaw(["--json", "--root", `${base}/link/../store`, "ls"])))).toEqual([
      expect.objectContaining({ agent_id: "coder", workspace_id: "repo", session_id: "s3b" }),
    ]);
  });

  it("--key-file: the key the system opens at that path", async () => {
    const base = await linkedBase();
    expectOk(await cliRaw(["--root", join(base, "store"), "keygen", "--out", join(base, "real", "store.key")]));
    expectOk(await cliRaw(["--root", join(base, "real", "store"), "--key-file", `${base}/link/../store.key`, "new", REF]));
    const result = await cliRaw(["--json", "--root", join(base, "real", "store"), "--key-file", "link/../store.key", "ls"], { cwd: base });
    expect(json(expectOk(result))).toEqual([expect.objectContaining({ agent_id: "coder", workspace_id: "repo", session_id: "s3b" })]);
  });

  it("a folder --remote: synced into the link's target's parent, and refused when that is the store itself (exit 2)", async () => {
    const base = await linkedBase();
    const store = join(base, "real", "store");
    expectOk(await cliRaw(["--root", store, "new", REF]));
    const itself = await cliRaw(["--root", store, "sync", "--remote", `${base}/link/../store`]);
    expect(itself.status, itself.stderr).toBe(2);
    expect(itself.stderr).toMatch(/^error\[usage\]: sync: --remote .* is this store/);
    expectOk(await cliRaw(["--root", store, "sync", "--remote", "link/../backup"], { cwd: base }));
    expect((await readdir(join(base, "real"))).sort()).toEqual(["backup", "inner", "store"]);
    expect(await readdir(base)).toEqual(expect.not.arrayContaining(["store", "backup"]));
  });

  it("files read (import FILE, --passphrase-file, --token-file): the file the system opens at that path", async () => {
    const base = await linkedBase();
    const store = join(base, "real", "store");
    expectOk(await cliRaw(["--root", store, "new", REF]));
    await writeFile(join(base, "real", "pass"), "correct horse battery staple\n");
    await writeFile(join(base, "real", "token"), "t0ken\n");
    // Folded as text, each of these names a file in `base` that does not exist.
    expectOk(
      await cliRaw(["--root", store, "export", REF, "--to", "rho-snapshot", "--passphrase-file", "link/../pass", "--out", join(base, "real", "s.sealed")], {
        cwd: base,
      }),
    );
    const imported = await cliRaw(["--json", "--root", store, "import", "link/../s.sealed", "--passphrase-file", "link/../pass", "--into", "coder/repo/s3c"], {
      cwd: base,
    });
    expect(json(expectOk(imported))).toEqual(expect.objectContaining({ session_id: "s3c" }));
    const served = await cliRaw(["--root", store, "sync", "--remote", "http://127.0.0.1:9/", "--token-file", "link/../token"], { cwd: base });
    expect(served.stderr).not.toMatch(/--token-file/);
  });
});

describe("--out mistakes are typed errors naming the path given (exit 4), and leave nothing behind", () => {
  it("a folder that does not exist: not-found naming it, for export and keygen", async () => {
    const { root } = await storeWithSession();
    const missing = join(await tempDir(), "nonexistent-dir");
    const exported = await cli(root, ["export", REF, "--to", "pi", "--cwd", "/repo", "--out", join(missing, "x")]);
    expect(exported.status).toBe(4);
    expect(exported.stderr).toBe(`error[not-found]: --out ${join(missing, "x")}: no such folder ${missing}; nothing was written\n`);
    const key = await cli(root, ["--json", "keygen", "--out", join(missing, "k")]);
    expect(key.status).toBe(4);
    expect(json(key)).toMatchObject({ error: { code: "not-found", out: join(missing, "k"), missing } });
    expect(key.stderr).not.toMatch(/\.tmp|ENOENT/);
  });

  it("a `..` after a missing folder: not-found naming that folder (the system cannot go up from it), not a place reached by folding the text", async () => {
    const { root, session } = await storeWithSession();
    const missing = join(await tempDir(), "nonexistent-dir");
    const target = `${missing}/../${relative(join(missing, ".."), join(session, "x.json"))}`;
    const result = await cli(root, ["--json", "keygen", "--out", target]);
    expect(result.status).toBe(4);
    expect(json(result)).toMatchObject({ error: { code: "not-found", out: target, missing } });
  });

  it("a folder where the file belongs: invalid-input saying so, no temporary file left", async () => {
    const { root } = await storeWithSession();
    const dir = await tempDir();
    const folder = join(dir, "already-a-folder");
    await mkdir(folder);
    for (const argv of [["export", REF, "--to", "pi", "--cwd", "/repo"], ["export", REF, "--to", "deepcode", "--cwd", "/repo"], ["keygen"]]) {
      const result = await cli(root, [...argv, "--out", folder]);
      expect(result.status).toBe(4);
      expect(result.stderr).toBe(`error[invalid-input]: --out ${folder}: found a folder where a file belongs; nothing was written\n`);
    }
    expect(await readdir(dir)).toEqual(["already-a-folder"]);
    expect(await readdir(folder)).toEqual([]);
  });

  it("a file where a folder belongs on the way: invalid-input naming that file", async () => {
    const { root } = await storeWithSession();
    const dir = await tempDir();
    const file = join(dir, "a-file");
    await writeFile(file, "x");
    for (const argv of [["export", REF, "--to", "rho-snapshot"], ["keygen"]]) {
      const result = await cli(root, [...argv, "--out", join(file, "sub/out")]);
      expect(result.status).toBe(4);
      expect(result.stderr).toBe(
        `error[invalid-input]: --out ${join(file, "sub/out")}: found a regular file at ${file} where a folder belongs; nothing was written\n`,
      );
    }
    expect(await readdir(dir)).toEqual(["a-file"]);
  });
});

describe("a folder the user may not write in: invalid-input naming it, permission denied (exit 4)", () => {
  // Root may write in any folder: as root the commands run as nobody (uid 65534), who owns the store but not the folder.
  const user: ChildUser | undefined = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;

  // Four real processes, each loading the CLI: on a loaded machine that alone can take most of the default 30 s.
  it("export (a file, and a DeepCode stream under its lock) and keygen, in real processes; nothing is written", async () => {
    const dir = await tempDir();
    await chmod(dir, 0o755);
    const root = join(dir, "store");
    await mkdir(root);
    if (user) await chown(root, user.uid, user.gid);
    expectOk(await bin(["--root", root, "new", REF, "--title", "T"], {}, undefined, user));
    const readOnly = join(dir, "read-only");
    await mkdir(readOnly);
    await chmod(readOnly, 0o555);
    const cases = [
      [["export", REF, "--to", "rho-snapshot"], "s3b.json"],
      [["export", REF, "--to", "deepcode", "--cwd", "/repo"], "s3b.v1.jsonl"],
      [["keygen"], "store.key"],
    ] as const;
    for (const [argv, name] of cases) {
      const target = join(readOnly, name);
      const result = await bin(["--root", root, "--json", ...argv, "--out", target], {}, undefined, user);
      expect(result.status, argv.join(" ")).toBe(4);
      expect(result.stderr).toBe(`error[invalid-input]: --out ${target}: permission denied (EACCES) to write in ${readOnly}; nothing was written\n`);
      expect(json(result)).toEqual({
        error: { code: "invalid-input", message: result.stderr.slice("error[invalid-input]: ".length, -1), out: target, folder: readOnly, errno: "EACCES" },
      });
    }
    expect(await readdir(readOnly)).toEqual([]);
  }, 120_000);
});

describe("a write the system refuses after the check", () => {
  it.each(["pi", "deepcode"])("writeExportFile (%s) names the target, not its temporary file, and leaves none", async (format) => {
    const dir = await tempDir();
    const target = join(dir, "gone/s1.v1.jsonl");
    const thrown = await writeExportFile(target, new Uint8Array([10]), format).catch((error: unknown) => error);
    expect(thrown).toBeInstanceOf(StorageError);
    expect((thrown as StorageError).message).toMatch(new RegExp(`^write --out "${target}" \\(${target}\\): .*\\(ENOENT\\)$`));
    expect(await readdir(dir)).toEqual([]);
  });

  // sysfs refuses to create a file in its folders even to root, which the check before the write (access) allows.
  it.skipIf(!statSync("/sys/kernel", { throwIfNoEntry: false })?.isDirectory())(
    "a folder that refuses the write itself (sysfs, EACCES even for root): invalid-input naming the target",
    async () => {
      const target = "/sys/kernel/s1.json";
      const thrown = await writeExportFile(target, new Uint8Array([10]), "rho-snapshot").catch((error: unknown) => error);
      expect(thrown).toBeInstanceOf(InvalidInputError);
      expect((thrown as InvalidInputError).message).toBe(`--out ${target}: permission denied (EACCES) to write in /sys/kernel; nothing was written`);
    },
  );
});

describe("a store root that is not a folder (exit 4)", () => {
  it("a regular file as --root: new, append and ls say so and change nothing", async () => {
    const dir = await tempDir();
    const file = join(dir, "not-a-folder");
    await writeFile(file, "x");
    const expected = `error[invalid-input]: the store ${file}: found a regular file where the store's folder belongs; nothing was read or written\n`;
    for (const argv of [["new", "a/b/c"], ["append", "a/b/c", "--role", "user", "--text", "x"], ["ls"], ["show", "a/b/c"], ["verify"]]) {
      const result = await cli(file, argv);
      expect(result.status, argv.join(" ")).toBe(4);
      expect(result.stderr).toBe(expected);
    }
    const viaBin = await bin(["--root", file, "new", "a/b/c"]);
    expect(viaBin.status).toBe(4);
    expect(viaBin.stderr).toBe(expected);
  });

  it("a root under a regular file names that file", async () => {
    const dir = await tempDir();
    const file = join(dir, "a-file");
    await writeFile(file, "x");
    const root = join(file, "store");
    for (const argv of [["new", "a/b/c"], ["ls"]]) {
      const result = await cli(root, argv);
      expect(result.status).toBe(4);
      expect(result.stderr).toBe(
        `error[invalid-input]: the store ${root}: found a regular file at ${file} where a folder belongs; nothing was read or written\n`,
      );
    }
  });
});
