/** Who writes: stamped into `writer.lock` so a blocked writer can say who holds the session. */
export interface WriterIdentity {
  /** Process id (Node), or 0 where there is none. */
  readonly pid: number;
  /** Host name, or a page/tab label in a browser. */
  readonly hostname: string;
  /** `node`, `browser`, `deno`, `bun` or `memory`. */
  readonly runtime: string;
}

/** The identity used when a runtime supplies none. */
export const ANONYMOUS_WRITER: WriterIdentity = { pid: 0, hostname: "unknown", runtime: "memory" };
