/**
 * How the playground words what it reports: errors (with their sessionfold class and code), the
 * owner of a writer lock, and recovery findings with their location.
 */
import { type Diagnostic, formatLocation, type LockOwner, SessionfoldError } from "../core/mod.ts";

/** An error as one line, with its class and code when it is a sessionfold error. */
export function describeError(error: unknown): string {
  if (error instanceof SessionfoldError) return `${error.message} [${error.name}, ${error.code}]`;
  if (error instanceof Error) return error.message;
  return String(error);
}

/** Who holds a writer lock: "Tab tab-1a2b", a Node process, or "Another tab" when it is not known. */
export function ownerName(owner: LockOwner | undefined): string {
  if (!owner || !owner.hostname) return "Another tab";
  return owner.runtime === "browser" ? `Tab ${owner.hostname}` : `${owner.hostname} (${owner.runtime}, pid ${owner.pid})`;
}

/** A recovery finding as one line: code, where, what, and whether it blocks writes. */
export function describeDiagnostic(d: Diagnostic): string {
  const where = formatLocation(d);
  const message = d.message.startsWith(where) ? d.message : `${where}: ${d.message}`;
  return `${d.code} — ${message}${d.fatal ? " (blocks writes)" : ""}`;
}
