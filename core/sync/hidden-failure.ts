/**
 * A served request's unexpected failure (the sync handler's, the chat route's): its client is
 * answered a message with an id and nothing of the error, which may name the server's files
 * or another user's session; the host's `onError` hears the whole error under that id
 * (docs/SYNC.md "Errors").
 *
 * @module
 */
import type { SessionfoldError } from "../errors.ts";
import { newId } from "../session/ids.ts";

/** The `onError` option of the sync handler and the chat route: the whole error, the id its client saw, the request. */
export type HiddenFailureHook = (error: SessionfoldError, context: { readonly id: string; readonly request: Request }) => void;

/**
 * Reports `error` to `onError` (or, without one, to `console.error`, once) under a new id,
 * and gives the id and the message its client is answered.
 *
 * @example
 * ```ts
 * import { InternalError } from "sessionfold";
 *
 * const failure = hideFailure(new InternalError("EIO: i/o error, read '/srv/store/x'"), new Request("http://localhost/pull"), undefined, "sync handler");
 * console.log(failure.message); // "internal error (id err_…)": the path went to console.error only
 * ```
 */
export function hideFailure(
  error: SessionfoldError,
  request: Request,
  onError: HiddenFailureHook | undefined,
  server: string,
): { readonly id: string; readonly message: string } {
  const id = newId("err");
  const reportFailureOfHook = (hookError: unknown) => console.error(`sessionfold ${server}: onError failed while reporting ${id}:`, hookError, error);
  try {
    if (!onError) console.error(`sessionfold ${server}: ${request.method} ${request.url} failed (id ${id}):`, error);
    else {
      // A hook may be async: its rejection is reported like its throw, never left unhandled.
      const result: unknown = onError(error, { id, request });
      if (result instanceof Promise) result.catch(reportFailureOfHook);
    }
  } catch (hookError) {
    reportFailureOfHook(hookError);
  }
  return { id, message: `internal error (id ${id})` };
}
