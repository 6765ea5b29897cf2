/**
 * Faults between a sync client and its server, scripted per request (docs/SYNC.md "Tests"):
 * wrap a sync fetch handler (`createSyncHandler`, or a deployment's own) and say which request
 * meets which fault. A connection cut before the handler runs or after it committed, a request
 * or answer body cut short, a delay, a request held until the test lets it go or cuts it (to
 * restart the server, or to abandon a push as a reload does, at an exact point). The same
 * script also wraps a {@linkcode SyncRemote} in process (a direct remote has no connection:
 * a cut is a thrown network error, and there are no bodies to truncate).
 *
 * A cut connection is an answer whose body stream fails: a server runtime (Deno.serve,
 * Bun.serve, `serveFetchHandler` of `sessionfold/node`) then aborts the connection, and the
 * client's fetch fails as it does when a network drops.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * import { createSyncHandler } from "sessionfold/sync";
 * import { SyncFaults } from "sessionfold/testing";
 *
 * const faults = new SyncFaults();
 * const handler = faults.wrap(createSyncHandler({ storage: new MemoryStorage(), authorize: () => ({ user: "me", may: () => true }) }));
 * faults.inject({ kind: "drop-after", route: "push" }); // the next push commits, and its answer is lost
 * ```
 * @module
 */
import type { SyncRemote } from "../core/sync/mod.ts";

/** The routes of the sync protocol a fault can target. */
export type SyncFaultRoute = "push" | "pull" | "read" | "segment";

/**
 * What happens to a request:
 * - `drop-before`: the connection is cut before the handler runs; nothing is applied.
 * - `drop-after`: the handler runs (and commits); the connection is cut before the answer.
 * - `truncate-request`: the handler gets the first `bytes` of the body (default half of it).
 * - `truncate-response`: the client gets the first `bytes` of the answer (default half of it), as if whole.
 * - `delay`: the request waits `ms` before the handler.
 * - `hold-before`, `hold-after`: the request waits, before the handler or with its answer
 *   ready, until the test calls {@linkcode HeldRequest.release} or {@linkcode HeldRequest.drop}
 *   (or its client goes away, which drops it).
 */
export type SyncFaultKind = "drop-before" | "drop-after" | "truncate-request" | "truncate-response" | "delay" | "hold-before" | "hold-after";

/** One scripted fault: its kind, which requests it waits for, and its parameters. */
export interface SyncFault {
  readonly kind: SyncFaultKind;
  /** Only requests of this route; default any. */
  readonly route?: SyncFaultRoute;
  /** Matching requests that pass untouched before the one that meets the fault. Default 0. */
  readonly skip?: number;
  /** `truncate-*`: how many bytes are kept. */
  readonly bytes?: number;
  /** `delay`: how long. */
  readonly ms?: number;
}

/** A request one fault met, in the order they came. */
export interface SyncFaultRecord {
  readonly route: string;
  readonly fault: SyncFaultKind | null;
}

/**
 * A fault the test scripted: `met` resolves when a request meets it. For `hold-*`, that
 * request then waits for {@linkcode HeldRequest.release} or {@linkcode HeldRequest.drop}.
 *
 * @example
 * ```ts
 * import { SyncFaults } from "sessionfold/testing";
 *
 * const faults = new SyncFaults();
 * const held = faults.inject({ kind: "hold-after", route: "push" });
 * // … start a sync, then:
 * await held.met; // the push is committed, its answer held
 * held.drop(); // and lost
 * ```
 */
export class HeldRequest {
  readonly fault: SyncFault;
  /** Resolves when a request meets the fault (for `hold-*`: when it starts waiting). */
  readonly met: Promise<void>;

  constructor(fault: SyncFault) {
    this.fault = fault;
    let meet!: () => void;
    let decide!: (decision: HoldDecision) => void;
    this.met = new Promise((resolve) => (meet = resolve));
    const decision = new Promise<HoldDecision>((resolve) => (decide = resolve));
    gates.set(this, { skip: fault.skip ?? 0, meet, decide, decision });
  }

  /** Lets a held request go on: to the handler (`hold-before`) or its answer to the client (`hold-after`). With `cut`, a `hold-before` request runs the handler and its answer is lost. */
  release(options: { readonly cut?: boolean } = {}): void {
    gates.get(this)!.decide(options.cut ? "run-then-cut" : "go");
  }

  /** Cuts a held request: it never reaches the handler (`hold-before`), or its answer is lost (`hold-after`). */
  drop(): void {
    gates.get(this)!.decide("cut");
  }
}

/** A fault's state the script keeps out of its public face: requests still to let pass, and the test's decision. */
interface Gate {
  skip: number;
  readonly meet: () => void;
  readonly decide: (decision: HoldDecision) => void;
  readonly decision: Promise<HoldDecision>;
}

const gates = new WeakMap<HeldRequest, Gate>();

/** Whether `held` takes the request of `route` (counting down its `skip` otherwise). */
function takes(held: HeldRequest, route: string): boolean {
  if (held.fault.route !== undefined && held.fault.route !== route) return false;
  const gate = gates.get(held)!;
  if (gate.skip > 0) {
    gate.skip--;
    return false;
  }
  return true;
}

/** Marks the fault met and, for `hold-*`, waits for the test (or for `signal`, which drops). */
function wait(held: HeldRequest, signal?: AbortSignal): Promise<HoldDecision> {
  const gate = gates.get(held)!;
  gate.meet();
  if (signal?.aborted) gate.decide("cut");
  signal?.addEventListener("abort", () => gate.decide("cut"), { once: true });
  return gate.decision;
}

type HoldDecision = "go" | "cut" | "run-then-cut";

/**
 * The fault script: {@linkcode SyncFaults.inject} queues faults, {@linkcode SyncFaults.wrap}
 * applies them to a fetch handler, {@linkcode SyncFaults.wrapRemote} to a remote in process.
 * Each request meets at most one fault: the first queued one that takes it.
 *
 * @example
 * ```ts
 * import { MemoryStorage } from "sessionfold";
 * import { createSyncHandler } from "sessionfold/sync";
 * import { SyncFaults } from "sessionfold/testing";
 *
 * const faults = new SyncFaults();
 * const handler = faults.wrap(createSyncHandler({ storage: new MemoryStorage(), authorize: () => ({ user: "me", may: () => true }) }));
 * faults.inject({ kind: "truncate-request", route: "push" });
 * faults.log; // [{ route: "push", fault: "truncate-request" }, …] once requests came
 * ```
 */
export class SyncFaults {
  readonly #queue: HeldRequest[] = [];
  readonly #holding = new Set<HeldRequest>();
  /** Every request seen, with the fault it met. */
  readonly log: SyncFaultRecord[] = [];

  /** Queues a fault for a coming request. */
  inject(fault: SyncFault): HeldRequest {
    const held = new HeldRequest(fault);
    this.#queue.push(held);
    return held;
  }

  /** Forgets the faults no request met yet. */
  clear(): void {
    for (const held of this.#queue.splice(0)) held.drop();
  }

  /**
   * Drops every request held now, as a server that stops cuts its connections (over HTTP
   * the restart's cut does this through the request's signal; a remote in process has none).
   */
  dropHeld(): void {
    for (const held of this.#holding) held.drop();
  }

  /** Faults still waiting for their request. */
  get queued(): number {
    return this.#queue.length;
  }

  /** The fault a request of `route` meets, taken off the queue; `undefined` for none. */
  #take(route: string): HeldRequest | undefined {
    const index = this.#queue.findIndex((held) => takes(held, route));
    const held = index < 0 ? undefined : this.#queue.splice(index, 1)[0];
    this.log.push({ route, fault: held?.fault.kind ?? null });
    if (held?.fault.kind === "hold-before" || held?.fault.kind === "hold-after") {
      this.#holding.add(held);
      void gates.get(held)!.decision.then(() => this.#holding.delete(held));
    }
    return held;
  }

  /** The handler with the script applied to each request. */
  wrap(handler: (request: Request) => Promise<Response>): (request: Request) => Promise<Response> {
    return async (request) => {
      const held = this.#take(new URL(request.url).pathname.split("/").at(-1) ?? "");
      if (!held) return handler(request);
      const { kind, bytes, ms } = held.fault;
      switch (kind) {
        case "drop-before":
          wait(held);
          return cutAnswer();
        case "drop-after":
          wait(held);
          await (await handler(request)).arrayBuffer();
          return cutAnswer();
        case "truncate-request": {
          wait(held);
          const body = new Uint8Array(await request.arrayBuffer());
          const headers = new Headers(request.headers);
          headers.delete("content-length");
          return handler(new Request(request.url, { method: request.method, headers, body: body.slice(0, bytes ?? body.length >> 1), signal: request.signal }));
        }
        case "truncate-response": {
          wait(held);
          const answer = await handler(request);
          const body = new Uint8Array(await answer.arrayBuffer());
          const headers = new Headers(answer.headers);
          headers.delete("content-length");
          return new Response(body.slice(0, bytes ?? body.length >> 1), { status: answer.status, headers });
        }
        case "delay":
          wait(held);
          await sleep(ms ?? 0);
          return handler(request);
        case "hold-before": {
          const decision = await wait(held, request.signal);
          if (decision === "cut") return cutAnswer();
          const answer = await handler(request);
          if (decision === "go") return answer;
          await answer.arrayBuffer();
          return cutAnswer();
        }
        case "hold-after": {
          const answer = await handler(request);
          const body = await answer.arrayBuffer();
          return (await wait(held, request.signal)) === "go" ? new Response(body, { status: answer.status, headers: answer.headers }) : cutAnswer();
        }
      }
    };
  }

  /**
   * The remote with the script applied to each call: a cut is a network error thrown to the
   * caller. A direct remote has no bodies, so `truncate-*` throws a `TypeError` saying so.
   */
  wrapRemote(remote: SyncRemote): SyncRemote {
    const call = async <T>(route: SyncFaultRoute, send: () => Promise<T>): Promise<T> => {
      const held = this.#take(route);
      if (!held) return send();
      const cut = () => new TypeError(`network error: the connection was cut (injected ${held.fault.kind} on ${route})`);
      switch (held.fault.kind) {
        case "drop-before":
          wait(held);
          throw cut();
        case "drop-after":
          wait(held);
          await send();
          throw cut();
        case "truncate-request":
        case "truncate-response":
          throw new TypeError(`${held.fault.kind}: a remote in process has no body to cut; inject it into an HTTP handler`);
        case "delay":
          wait(held);
          await sleep(held.fault.ms ?? 0);
          return send();
        case "hold-before": {
          const decision = await wait(held);
          if (decision === "cut") throw cut();
          const answer = await send();
          if (decision === "go") return answer;
          throw cut();
        }
        case "hold-after": {
          const answer = await send();
          if ((await wait(held)) === "go") return answer;
          throw cut();
        }
      }
    };
    return {
      id: remote.id,
      push: (request) => call("push", () => remote.push(request)),
      pull: (request) => call("pull", () => remote.pull(request)),
      read: (request) => call("read", () => remote.read(request)),
      segment: (request) => call("segment", () => remote.segment(request)),
    };
  }
}

/** An answer whose body fails at once: the serving runtime cuts the connection. */
function cutAnswer(): Response {
  const body = new ReadableStream({ start: (controller) => controller.error(new Error("connection cut (injected fault)")) });
  return new Response(body, { status: 200, headers: { "content-type": "application/json" } });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
