/**
 * Which local store this page is: the playground's own (`sessionfold-playground`), a test's
 * (`?db=`), or one of the demo's devices (`?device=a`, `?device=b`, …). A device is a browser
 * profile of its own in miniature: its own IndexedDB database, so its own sync client id
 * (kept in that database's `sync/remotes/…`) and its own Web Lock names (which carry the
 * database name), beside the other devices in the same browser (devices.html shows two).
 */

/** The page's local store and whether it syncs with the local sync server. */
export interface DeviceChoice {
  /** `a`, `b`, …: the device this page plays; `undefined` for the plain playground. */
  readonly device: string | undefined;
  /** The IndexedDB database of its sessions. */
  readonly dbName: string;
  /**
   * Whether it syncs with the sync server beside the playground (`/sync`). The playground and
   * every device do; a page on a database of its own (`?db=`, the tests' sandbox) does not
   * unless asked (`&sync=on`), so it never fills its sandbox with the shared store's sessions.
   */
  readonly syncs: boolean;
}

/** A device name: a short lowercase word, so it fits a database name and a label. */
const DEVICE = /^[a-z0-9][a-z0-9-]{0,15}$/;

/**
 * Reads the page's query.
 *
 * @example
 * ```ts
 * deviceChoice(new URLSearchParams("device=a")); // { device: "a", dbName: "sessionfold-playground-device-a", syncs: true }
 * ```
 */
export function deviceChoice(query: URLSearchParams): DeviceChoice {
  const named = query.get("device");
  const device = named !== null && DEVICE.test(named) ? named : undefined;
  const db = query.get("db");
  const sync = query.get("sync");
  return {
    device,
    dbName: db ?? (device ? `sessionfold-playground-device-${device}` : "sessionfold-playground"),
    syncs: sync === "on" || (sync !== "off" && db === null),
  };
}
