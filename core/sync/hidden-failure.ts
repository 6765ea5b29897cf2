/**
 * A served request's unexpected failure (the sync handler's, the chat route's): its client is
 * answered a message with an id and nothing of the error, which may name the server's files
 * or another user's session; the host's `onError` hears the whole error under that id
 * (docs/SYNC.md "Errors").
 *
 * @module
 */
import { asSessionfoldError, type SessionfoldError } from "../errors.ts";
import { newId } from "../session/ids.ts";

/**
 * The `onError` option of the sync handler and the chat route: it hears each failure they hide
 * from their client, the whole error (message, stack, `cause`), the id the client was told
 * and the request that failed.
 *
 * @example
 * ```ts
 * import type { HiddenFailureHook } from "sessionfold/sync";
 *
 * const onError: HiddenFailureHook = (error, { id, request }) => console.error(id, request.url, error);
 * ```
 */
export type HiddenFailureHook = (error: SessionfoldError, context: { readonly id: string; readonly request: Request }) => void;

/**
 * Reports `error` (typed as a {@linkcode SessionfoldError}, `failed` its message when it is
 * not one) under a new id to `served.onError`, or without one to `console.error`, once; gives
 * the id and the message its client is answered. `source` names what failed in the console's
 * line; `served` is the request being answered, when there is one, with its host's hook (a hook
 * hears only a request's failures, so it comes with the request).
 *
 * @example
 * ```ts
 * const failure = hideFailure(new Error("EIO: i/o error, read '/srv/store/x'"), "sync request failed", "sync handler", {
 *   request: new Request("http://localhost/pull"),
 * });
 * console.log(failure.message); // "internal error (id err_…)": the path went to console.error only
 * ```
 */
export function hideFailure(
  error: unknown,
  failed: string,
  source: string,
  served?: { readonly request: Request; readonly onError?: HiddenFailureHook | undefined },
): { readonly id: string; readonly message: string } {
  const whole = asSessionfoldError(error, failed);
  const id = newId("err");
  const reportFailureOfHook = (hookError: unknown) => console.error(`sessionfold ${source}: onError failed while reporting ${id}:`, hookError, whole);
  try {
    if (served?.onError) {
      // A hook may be async: its rejection is reported like its throw, never left unhandled.
      const result: unknown = served.onError(whole, { id, request: served.request });
      if (result instanceof Promise) result.catch(reportFailureOfHook);
    } else {
      const what = served ? `${served.request.method} ${served.request.url} ` : "";
      console.error(`sessionfold ${source}: ${what}failed (id ${id}):`, whole);
    }
  } catch (hookError) {
    reportFailureOfHook(hookError);
  }
  return { id, message: `internal error (id ${id})` };
}
