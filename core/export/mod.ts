/**
 * Export safety (docs/FORMAT.md "Importing and exporting other systems' sessions", "Redaction"): decide what the recipient of an export receives.
 *
 * - {@linkcode prepareExport} applies {@linkcode ExportOptions} to a `PortableSession`:
 *   `redact` replaces secrets in every string that can reach an export, and the `drop*`
 *   flags withhold the system prompt, tool outputs, file data, provider context, metadata
 *   or reasoning. It returns a new session for any writer of `core/formats` and an
 *   {@linkcode ExportReport} of counts (never secret values).
 * - {@linkcode redactText} / {@linkcode redactJson} are the redaction itself, usable alone;
 *   {@linkcode REDACTION_DETECTORS} lists the detectors and `detectors.ts` documents what each
 *   finds and which look-alikes (words, paths, git SHAs, UUIDs…) it deliberately keeps.
 *
 * A JSON snapshot is a data export, not a sanitized transcript: without options nothing is
 * removed. Redaction is best-effort pattern matching; binary file data (images, archives)
 * cannot be inspected and is reported in `binaryFilesKept`.
 *
 * @example
 * ```ts
 * import { MemoryStorage, Sessions, prepareExport, writeRhoSnapshot } from "sessionfold";
 *
 * const sessions = new Sessions({ storage: new MemoryStorage() });
 * const session = await sessions.create({ agentId: "a1", workspaceId: "w1" });
 * const { session: safe, report } = prepareExport(await session.exportPortable(), {
 *   redact: true,
 *   dropProviderContext: true,
 * });
 * const bytes = writeRhoSnapshot(safe);
 * ```
 * @module
 */
export {
  isSecretKeyName,
  REDACTION_DETECTORS,
  type RedactionDetector,
  type RedactionDetectorInfo,
  type RedactionFinding,
  redactionPlaceholder,
  redactJson,
  type RedactJsonResult,
  redactText,
  type RedactTextResult,
} from "./redact.ts";
export { type ExportField, type ExportOptions, type ExportReport, OMITTED, prepareExport } from "./policy.ts";
