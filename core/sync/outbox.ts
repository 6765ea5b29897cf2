/**
 * A sync run's outbox sent to the remote (docs/SYNC.md "The engine"): numbered mutations in
 * batches within the run's sizes, a batch too large halved, a refusal of one session's
 * mutation set aside as that session's conflict, a gap closed by renumbering, each answer
 * taken into the agreed state (acknowledgements.ts).
 *
 * @module
 */
import { SyncRefusedError } from "../errors.ts";
import { type Mutation, SYNC_PROTOCOL_VERSION } from "./protocol.ts";
import { byteEstimate, tooLarge } from "./request-sizes.ts";
import { acknowledge } from "./acknowledgements.ts";
import type { SyncRun } from "./sync-run.ts";

/**
 * Sends the outbox until it is empty, or holds only mutations deferred to the next run.
 * `false` when the remote stopped it for a reason that is not one session's (reported as a
 * conflict); a refusal of one session's mutation sets that session aside and goes on with
 * the others (docs/SYNC.md "The engine", "One session at a time").
 */
export async function flushOutbox(run: SyncRun): Promise<boolean> {
  const state = run.state;
  deferredLast(run);
  while (state.pending.length > 0 && !run.deferred.has(state.pending[0]!.ref)) {
    const batch = nextBatch(run);
    let outcome;
    try {
      outcome = await run.remote.push({ v: SYNC_PROTOCOL_VERSION, client_id: state.client_id, mutations: batch });
    } catch (error) {
      if (!(error instanceof SyncRefusedError)) throw error;
      // Refused whole: nothing was applied. Too large: a smaller batch, down to the one mutation, which is its session's refusal.
      if (error.reason === "too-large" && batch.length > 1) {
        run.batchCap = Math.ceil(batch.length / 2);
        continue;
      }
      const refusal = error.reason === "too-large" ? tooLarge(batch[0]!, error) : { ...error.details, reason: error.reason, message: error.message };
      // Otherwise the refusal is about the batch's first mutation.
      if (!(await refused(run, refusal))) throw error;
      continue;
    }
    // Taken: the next batch may be larger again.
    run.batchCap = Math.min(run.batchMutations, run.batchCap * 2);
    for (const result of outcome.results) acknowledge(run, result);
    state.pending = state.pending.filter((m) => !outcome.results.some((r) => r.number === m.number));
    await run.save();
    if (outcome.error && !(await refused(run, outcome.error))) {
      run.report.conflicts.push({ ref: String(outcome.error.ref ?? ""), reason: outcome.error.reason, message: outcome.error.message });
      return false;
    }
  }
  return true;
}

/**
 * Answers a refusal of the first pending mutation, which the remote did not apply (docs/SYNC.md
 * "Errors": a refused request changes nothing, and the answered ones before it left the
 * outbox). A gap renumbers the outbox. A refusal that names that mutation's session is a
 * conflict of that session alone: `session-busy` (another writer holds it on the remote)
 * defers its mutations to the next run, behind the others; any other reason takes them out
 * of the outbox, and the session is compared again on the next run. The rest is numbered
 * from the refused number, which the remote still waits for. `false`: not one session's
 * refusal (the caller stops).
 */
async function refused(run: SyncRun, refusal: { readonly reason: string; readonly message: string; readonly [detail: string]: unknown }): Promise<boolean> {
  const state = run.state;
  const first = state.pending[0];
  if (refusal.reason === "mutation-gap") {
    closeGap(run, Number(refusal["expected"]));
  } else if (first && refusal["ref"] === first.ref) {
    run.conflict({ ref: first.ref, reason: refusal.reason, message: refusal.message });
    if (refusal.reason === "session-busy") {
      run.deferred.add(first.ref);
      deferredLast(run);
    } else {
      run.setAside.add(first.ref);
      state.pending = state.pending.filter((m) => m.ref !== first.ref);
      renumberFrom(run, first.number);
    }
  } else return false;
  await run.save();
  return true;
}

/**
 * Moves the mutations of deferred sessions behind the others, numbered from the first
 * pending number. Only when a deferred session's mutation is first: then the remote refused
 * it in this run and waits for its number, so no pending number was applied.
 */
function deferredLast(run: SyncRun): void {
  const pending = run.state.pending;
  const first = pending[0];
  if (!first || !run.deferred.has(first.ref)) return;
  run.state.pending = [...pending.filter((m) => !run.deferred.has(m.ref)), ...pending.filter((m) => run.deferred.has(m.ref))];
  renumberFrom(run, first.number);
}

/** Numbers the pending mutations `number`, `number + 1`… in their order (none of them was applied). */
function renumberFrom(run: SyncRun, number: number): void {
  const state = run.state;
  state.pending = state.pending.map((m, i) => ({ ...m, number: number + i }));
  state.next_number = number + state.pending.length;
}

/**
 * The first pending mutations, at most `batchMutations` (fewer after a batch the remote
 * found too large) and about `batchBytes` (at least one), none of a deferred session.
 */
function nextBatch(run: SyncRun): Mutation[] {
  const pending = run.state.pending;
  let bytes = byteEstimate(pending[0]!);
  let count = 1;
  const sendable = (m: Mutation) => !run.deferred.has(m.ref) && (bytes += byteEstimate(m)) <= run.batchBytes;
  while (count < Math.min(pending.length, run.batchCap) && sendable(pending[count]!)) count++;
  return pending.slice(0, count);
}

/**
 * The server waits for `expected`. Below the first pending number: the numbers before it
 * were applied and their answer lost, so they go. Above it: the server lost mutations it
 * had acknowledged (restored from a backup), so the pending ones are numbered from there.
 */
function closeGap(run: SyncRun, expected: number): void {
  const state = run.state;
  const first = state.pending[0]?.number;
  if (first === undefined || !Number.isSafeInteger(expected)) return;
  if (expected > first) {
    state.pending = state.pending.filter((m) => m.number >= expected);
    state.next_number = (state.pending.at(-1)?.number ?? expected - 1) + 1;
  } else renumberFrom(run, expected);
}
