/**
 * `show` runs with V8's optimizing compiler off when the process is its own
 * (`CliIo.ownsProcess`, which `processIo()` sets), and `main()` called with io of a host's or a
 * test's own leaves the process's compiler alone (docs/decisions.md "show without the
 * optimizing compiler"). Each case is a fresh process: the flag, once set, holds for the rest of it.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { missingRoot, REPO } from "./support.ts";

/**
 * Runs `argv` through `main()` in a fresh process (tsx, as the clone's bin runs it), then asks V8
 * to optimize a probe function and prints whether it did.
 */
function optimizedAfter(argv: readonly string[], ownsProcess: boolean): Promise<string> {
  const mainUrl = pathToFileURL(join(REPO, "runtime-node/cli/main.ts")).href;
  const script = [
    `const { main } = await import(${JSON.stringify(mainUrl)});`,
    `await main(${JSON.stringify(argv)}, { stdout: () => {}, stderr: () => {}, env: {}, worker: false, fsync: false, ownsProcess: ${ownsProcess} });`,
    // Natives syntax, parsed by V8 itself (tsx transforms this script, not a Function's body).
    `const probe = (x) => x + 1;`,
    `const status = new Function("probe", "%PrepareFunctionForOptimization(probe); probe(1); probe(2); %OptimizeFunctionOnNextCall(probe); probe(3); return %GetOptimizationStatus(probe);")(probe);`,
    // Bit 4 of V8's optimization status: the function runs optimized code.
    `console.log(status & 16 ? "optimized" : "not optimized");`,
  ].join("\n");
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ["--allow-natives-syntax", "--import", "tsx", "--input-type=module", "-e", script],
      { cwd: REPO, timeout: 60_000 },
      (error, stdout, stderr) => error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout.trim()),
    );
  });
}

describe("the optimizing compiler", () => {
  it("is off after show in the command's own process, and on in a process that only calls main()", async () => {
    const root = await missingRoot();
    const argv = ["--root", root, "show", "a1/w1/s1"];
    expect(await optimizedAfter(argv, true)).toBe("not optimized");
    expect(await optimizedAfter(argv, false)).toBe("optimized");
    // A command that may run long keeps it.
    expect(await optimizedAfter(["--root", root, "messages", "a1/w1/s1"], true)).toBe("optimized");
  }, 120_000);
});
