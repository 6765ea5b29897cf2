/**
 * A TCP proxy on loopback in front of the test server (its Unix socket, or its TCP address),
 * which drops a client's connection at the point a test chooses, found by what goes through
 * it, never by time: reset (RST, `ECONNRESET` for the client) once the client sent a given
 * statement, or once the server answered it; or the server's own end of an idle session
 * (`57P05`: the proxy sets `idle_session_timeout` on the idle connections when told, as a
 * statement of its own whose answer it keeps) held back until the client sends its next
 * statement, so that statement meets it, as it does when the two cross on the network. Not a
 * test file itself.
 */
import { connect, createServer, type Server, type Socket } from "node:net";

/** A client's connection through the proxy and the proxy's own to the server. */
interface Link {
  readonly client: Socket;
  readonly server: Socket;
  /** Set while the answer to the proxy's own `SET idle_session_timeout` is on its way: kept from the client. */
  settingTimeout?: boolean;
  /** What the server sent after it ended the session, not yet given to the client. */
  held?: Buffer[];
}

/** What the proxy does to the next connection whose client sends the trap's marker. */
interface Trap {
  readonly marker: Buffer;
  /** `sent`: reset as soon as the client sent it (nothing reaches the server); `answered`: once the server answered it. */
  readonly when: "sent" | "answered";
  readonly sprung: () => void;
}

/** The proxy: the test server's URL through it, traps to arm, the sessions it holds ended. */
export interface DroppingProxy {
  /** The test server's URL through the proxy (127.0.0.1, its port). */
  readonly url: string;
  /** Resets the next connection whose client sends `marker` (a prepared statement's name goes in each Bind) at `when`; resolves once it did. */
  resetOn(marker: string, when: "sent" | "answered"): Promise<void>;
  /**
   * Gives every connection open now (idle: the test awaited what it sent) an `idle_session_timeout` of 1 ms; resolves
   * once the server ended each (`57P05`), an end the proxy holds back from its client until the client sends again.
   */
  endIdleSessions(): Promise<void>;
  close(): Promise<void>;
}

/** The SQLSTATE field of an ErrorResponse: the server ending an idle session. */
const IDLE_SESSION_ENDED = Buffer.from("C57P05\0");
/** ReadyForQuery, idle: the end of the answer to the proxy's own statement. */
const READY = Buffer.from([0x5a, 0, 0, 0, 5, 0x49]);

/** A simple-query message of `sql`. */
function simpleQuery(sql: string): Buffer {
  const text = Buffer.from(`${sql}\0`);
  const header = Buffer.alloc(5);
  header.write("Q");
  header.writeInt32BE(4 + text.length, 1);
  return Buffer.concat([header, text]);
}

/** Starts a proxy to the server of `url` (a `postgres://` URL, `?host=` naming a socket folder or not). */
export async function startDroppingProxy(url: string): Promise<DroppingProxy> {
  const target = new URL(url);
  const socketFolder = target.searchParams.get("host");
  const port = Number(target.port || 5432);
  const traps: Trap[] = [];
  const links = new Set<Link>();
  let ended = 0;
  const endWaits: { count: number; resolve: () => void }[] = [];
  const sessionEnded = (link: Link, data: Buffer): void => {
    (link.held ??= []).push(data);
    if (link.held.length > 1) return;
    ended += 1;
    for (const wait of endWaits.filter((w) => ended >= w.count)) wait.resolve();
  };
  const proxy: Server = createServer((client) => {
    const server = socketFolder ? connect(`${socketFolder}/.s.PGSQL.${port}`) : connect(port, target.hostname);
    const link: Link = { client, server };
    links.add(link);
    let answering: Trap | undefined;
    const drop = (): void => {
      links.delete(link);
      client.resetAndDestroy();
      server.destroy();
    };
    client.on("data", (data: Buffer) => {
      if (link.held) {
        // The client's next statement meets the end the server sent while it was idle.
        client.end(Buffer.concat(link.held));
        server.destroy();
        links.delete(link);
        return;
      }
      const at = traps.findIndex((trap) => data.includes(trap.marker));
      const trap = at < 0 ? undefined : traps.splice(at, 1)[0]!;
      if (trap?.when === "sent") {
        drop();
        trap.sprung();
        return;
      }
      if (trap) answering = trap;
      server.write(data);
    });
    server.on("data", (data: Buffer) => {
      if (answering) {
        drop();
        answering.sprung();
        return;
      }
      if (link.settingTimeout) {
        const ready = data.indexOf(READY);
        if (ready < 0) return;
        link.settingTimeout = false;
        data = data.subarray(ready + READY.length);
        if (data.length === 0) return;
      }
      if (link.held || data.includes(IDLE_SESSION_ENDED)) return sessionEnded(link, data);
      client.write(data);
    });
    // The server's end after an idle session's FATAL is held back with it; any other end goes through.
    server.on("end", () => link.held || client.end());
    client.on("end", () => server.end());
    client.on("error", drop);
    server.on("error", () => link.held || drop());
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const through = new URL(url);
  through.searchParams.delete("host");
  through.hostname = "127.0.0.1";
  through.port = String((proxy.address() as { port: number }).port);
  return {
    url: through.href,
    resetOn: (marker, when) => new Promise((sprung) => traps.push({ marker: Buffer.from(marker), when, sprung })),
    endIdleSessions: () => {
      const count = ended + links.size;
      for (const link of links) {
        link.settingTimeout = true;
        link.server.write(simpleQuery("SET idle_session_timeout = 1"));
      }
      return new Promise((resolve) => endWaits.push({ count, resolve }));
    },
    close: async () => {
      for (const { client, server } of links) {
        client.destroy();
        server.destroy();
      }
      await new Promise((resolve) => proxy.close(resolve));
    },
  };
}
