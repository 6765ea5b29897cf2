/**
 * What a probe opens, and which probe opens it (`lib/child.ts` starts it): sessionfold in
 * `probe.ts` (from the sources) or `probe-package.ts` (the packed package), the baselines and
 * the peers in `probe-peers.ts`, which loads nothing of sessionfold. Imports nothing, so that
 * every probe and the case that starts them can read it.
 *
 * @module
 */

/**
 * The opens of sessionfold. `sessionfold-eager`: through its worker in a process started with
 * `--no-lazy` (lib/child.ts), so that V8 compiles every function as its module loads, before
 * the clock: the first open without its first-call compiles, a bound of `open.node.cold`.
 */
export type SessionfoldImpl = "sessionfold" | "sessionfold-noworker" | "sessionfold-eager";
/**
 * The opens of the baselines and the peers. `worker-floor`: the bound of `open.node.*`
 * (lib/worker-floor.ts), on a sessionfold tree.
 */
const PEER_IMPLS = ["worker-floor", "jsonl", "pi", "langgraph"] as const;
export type PeerImpl = (typeof PEER_IMPLS)[number];
/** Everything a probe opens. */
export type ProbeImpl = SessionfoldImpl | PeerImpl;

/** Whether `impl` is a baseline's or a peer's open, which `probe-peers.ts` runs. */
export function isPeerImpl(impl: ProbeImpl): impl is PeerImpl {
  return (PEER_IMPLS as readonly string[]).includes(impl);
}
