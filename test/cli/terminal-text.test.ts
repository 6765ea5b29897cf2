/**
 * Stored text reaches a terminal escaped (docs/CLI.md "Usage"): a title, a label or a message
 * holding terminal escape codes is printed by every readable-text command with each control
 * character written `\uXXXX`, and `--json` keeps it exact.
 */
import { describe, expect, it } from "vitest";
import { cli, expectOk, json, missingRoot } from "./support.ts";

/** A window-title sequence, a C1 CSI, a tab, a carriage return. */
const TITLE = "evil\u001b]0;pwned\u0007\u009b2J\ttab\rover";
/** A clear-screen sequence, DEL and the message's own line break. */
const TEXT = "hi\u001b[2J\nline2\u007f";
/** Any control character but a line break: C0 (without `\n`), DEL, C1. */
// deno-lint-ignore no-control-regex -- the characters no readable output may hold
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/u;

describe("stored text in readable output", () => {
  it("ls, show, messages and compose print control characters escaped; --json keeps them exact", async () => {
    const root = await missingRoot();
    expectOk(await cli(root, ["new", "a1/w1/s1", "--title", TITLE]));
    expectOk(await cli(root, ["append", "a1/w1/s1", "--role", "user", "--text", TEXT]));
    for (const command of [["ls"], ["show", "a1/w1/s1"], ["messages", "a1/w1/s1"], ["compose", "a1/w1/s1"]]) {
      const result = expectOk(await cli(root, command));
      expect(result.stdout, command.join(" ")).not.toMatch(CONTROL);
      expect(result.stderr, command.join(" ")).not.toMatch(CONTROL);
    }
    const listed = expectOk(await cli(root, ["ls"])).stdout;
    expect(listed).toContain("evil\\u001b]0;pwned\\u0007\\u009b2J\\u0009tab\\u000dover".slice(0, 40 - 1));
    expect(expectOk(await cli(root, ["show", "a1/w1/s1"])).stdout).toContain('"evil\\u001b]0;pwned\\u0007\\u009b2J\\u0009tab\\u000dover"');
    expect(expectOk(await cli(root, ["messages", "a1/w1/s1"])).stdout).toBe("#1 user: hi\\u001b[2J line2\\u007f\n");
    expect(json<{ title: string }[]>(expectOk(await cli(root, ["--json", "ls"])))[0]!.title).toBe(TITLE);
    expect(json<{ meta: { title: string } }>(expectOk(await cli(root, ["--json", "show", "a1/w1/s1"]))).meta.title).toBe(TITLE);
    expect(json<{ parts: { text: string }[] }[]>(expectOk(await cli(root, ["--json", "messages", "a1/w1/s1"])))[0]!.parts[0]!.text).toBe(TEXT);
  });

  it("an error line escapes what it quotes (a C1 CSI that JSON leaves as it is); --json's error keeps it", async () => {
    const root = await missingRoot();
    expectOk(await cli(root, ["new", "a1/w1/s1"]));
    const refused = await cli(root, ["--json", "ls", "--cursor", "\u009b2J"]);
    expect(refused.status).toBe(4);
    expect(refused.stderr).toMatch(/^error\[invalid-input\]: list cursor "\\u009b2J" is not a cursor/);
    expect(refused.stderr).not.toMatch(CONTROL);
    expect(json<{ error: { cursor: string } }>(refused).error.cursor).toBe("\u009b2J");
  });
});
