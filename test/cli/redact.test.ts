/**
 * The redaction audit through the command line: `export --redact` for every `--to` the CLI
 * offers (read from the command's own option, so a format added later is audited too) leaks
 * no planted secret, while the same export without `--redact` carries every field that format
 * has a place for (the control, as in test/export/redaction-audit.test.ts).
 */
import { describe, expect, it } from "vitest";
import { prepareExport, Sessions } from "../../core/mod.ts";
import * as formats from "../../core/formats/mod.ts";
import { NodeFileStorage } from "../../runtime-node/mod.ts";
import { findCommand } from "../../runtime-node/cli/commands/mod.ts";
import { auditSession, carried, leaksIn, PLANTS } from "../export/audit.ts";
import { cli, expectOk, missingRoot } from "./support.ts";

const REF = "a1/w1/audit";
/** The writer behind each `--to`. */
const WRITER_OF: Record<string, (typeof formats)[keyof typeof formats]> = {
  deepcode: formats.writeDeepCodeV1,
  "rho-snapshot": formats.writeRhoSnapshot,
  pi: formats.writePi,
};
const TARGETS = String((await findCommand("export")!.load()).spec.options["to"]!.value).split("|");

async function auditStore(): Promise<{ root: string; sessions: Sessions }> {
  const root = await missingRoot();
  const sessions = new Sessions({ storage: new NodeFileStorage({ root, fsync: false }) });
  await sessions.importPortable(REF, auditSession());
  return { root, sessions };
}

describe("sessionfold export --redact, for every --to", () => {
  it("offers the formats the audit knows", () => {
    expect(TARGETS.length).toBeGreaterThanOrEqual(3);
    for (const to of TARGETS) expect(Object.keys(WRITER_OF), `--to ${to} has no writer in this test`).toContain(to);
  });

  it.each(TARGETS)("--to %s", async (to) => {
    const { root, sessions } = await auditStore();
    const plain = expectOk(await cli(root, ["export", REF, "--to", to]));
    // The control: the CLI's plain export carries what the format's writer carries for this session.
    const portable = await (await sessions.open(REF)).exportPortable();
    const writer = WRITER_OF[to] as (session: typeof portable) => Uint8Array;
    const expected = carried({ name: to, bytes: writer(prepareExport(portable).session) });
    expect(carried({ name: to, bytes: plain.stdout })).toEqual(expected);
    expect(expected.length).toBeGreaterThan(15);
    const redacted = expectOk(await cli(root, ["export", REF, "--to", to, "--redact"]));
    expect(leaksIn({ name: to, bytes: redacted.stdout })).toEqual([]);
    expect(redacted.stdout).toContain("[REDACTED:");
    expect(redacted.stdout).not.toContain(PLANTS.toolCallId.text.slice(8, 24));
  });
});
