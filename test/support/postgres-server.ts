/**
 * A throwaway PostgreSQL server for tests and benchmarks: `initdb` into a temp folder and
 * `pg_ctl start` on a Unix socket in that folder (no TCP port), stopped and removed by
 * `stop()`. As root it runs the server as the `postgres` user, which PostgreSQL requires.
 * The tests use SESSIONFOLD_TEST_POSTGRES_URL instead when it is set (README: "Tests on
 * PostgreSQL"). Not a test file itself.
 */
import { execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The variable that points the tests at a server of one's own. */
export const POSTGRES_URL_VARIABLE = "SESSIONFOLD_TEST_POSTGRES_URL";
/** Set to 1 to run the tests without PostgreSQL (its tests then skip, saying so). */
export const POSTGRES_OPT_OUT_VARIABLE = "SESSIONFOLD_TEST_POSTGRES_SKIP";

/** A running server. */
export interface TestServer {
  readonly url: string;
  stop(): void;
}

/** The folder of `initdb` and `pg_ctl`: PATH first, then Debian's /usr/lib/postgresql/<newest>/bin. */
export function findPostgresBin(): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(":")) {
    if (dir && existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl"))) return dir;
  }
  const debian = "/usr/lib/postgresql";
  if (!existsSync(debian)) return undefined;
  const versions = readdirSync(debian).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
  for (const version of versions) {
    const dir = join(debian, version, "bin");
    if (existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl"))) return dir;
  }
  return undefined;
}

/**
 * Starts a server in a new temp folder. `durable: false` turns fsync off (tests only: the
 * server itself is never killed there); benchmarks keep PostgreSQL's defaults.
 *
 * @throws {Error} when no binaries are found or the server does not start, with its log.
 */
export function startTestServer(options: { durable?: boolean; maxConnections?: number } = {}): TestServer {
  const bin = findPostgresBin();
  if (!bin) throw new Error("no PostgreSQL binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql/*/bin");
  const dir = mkdtempSync(join(tmpdir(), "sessionfold-pg-"));
  const data = join(dir, "data");
  const asRoot = process.getuid?.() === 0;
  if (asRoot) chownSync(dir, uidOf("postgres"), gidOf("postgres"));
  const run = (command: string, args: string[]): void => {
    const [file, argv] = asRoot ? ["runuser", ["-u", "postgres", "--", join(bin, command), ...args]] : [join(bin, command), args];
    execFileSync(file, argv, { stdio: ["ignore", "pipe", "pipe"] });
  };
  const settings = [
    `-k ${dir}`,
    "-c listen_addresses=''",
    `-c max_connections=${options.maxConnections ?? 500}`,
    ...(options.durable === false ? ["-c fsync=off", "-c full_page_writes=off"] : []),
  ].join(" ");
  try {
    run("initdb", ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-instructions"]);
    run("pg_ctl", ["-D", data, "-l", join(dir, "server.log"), "-o", settings, "-w", "start"]);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    const output = error as { stderr?: Buffer; stdout?: Buffer };
    throw new Error(`could not start PostgreSQL from ${bin}: ${String(output.stderr ?? output.stdout ?? error)}`);
  }
  let stopped = false;
  return {
    url: `postgres://postgres@localhost/postgres?host=${encodeURIComponent(dir)}`,
    stop() {
      if (stopped) return;
      stopped = true;
      try {
        run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

function uidOf(user: string): number {
  return Number(execFileSync("id", ["-u", user]).toString().trim());
}

function gidOf(user: string): number {
  return Number(execFileSync("id", ["-g", user]).toString().trim());
}
