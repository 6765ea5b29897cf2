/**
 * Debian's chromium and the launch flags that keep it off this machine's closed network,
 * shared by vitest's browser project, the page tests, the demo's
 * end-to-end tests and the browser benchmarks. Not a test file itself.
 */

/** `$CHROMIUM_PATH`, else Debian's `/usr/bin/chromium` (never a downloaded browser). */
export const CHROMIUM_PATH = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium";

/** Headless, sandbox-free as root, and with every background connection turned off. */
export const CHROMIUM_ARGS: readonly string[] = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
