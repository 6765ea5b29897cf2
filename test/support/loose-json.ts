/**
 * A parsed JSON document whose shape the test knows and asserts on field by field (the CLI's
 * `--json` output, a page's structured-cloned answer, a fixture edited in place). It is `any`
 * once, here, so each test reads and edits the fields it names without a cast per field.
 *
 * @module
 */

// deno-lint-ignore no-explicit-any
export type LooseJson = any;
