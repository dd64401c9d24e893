// Where PostgreSQL-backed tests find their PostgreSQL: POSTGRES_URL, default
// postgres://postgres@127.0.0.1:5432/postgres (trust auth). Each test file creates its own
// database with a unique name and drops it (and only it) at the end. When none answers the tests
// are skipped with a loud notice, unless REQUIRE_POSTGRES=1 (CI), where that fails the run.
// startPrivatePostgres(): a server of its own (installed binaries, a temporary data directory)
// for tests that crash PostgreSQL; never the shared one.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './redis.ts';

export const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  /** URL of the database created for this file. */
  url: string;
  name: string;
  /** Drops the database (its sessions are ended first). */
  drop(): Promise<void>;
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** A fresh database for one test file, or null (tests must then skip). */
export async function createTestDatabase(label: string): Promise<TestDatabase | null> {
  const base = process.env.POSTGRES_URL || DEFAULT_POSTGRES_URL;
  const admin = new pg.Client({ connectionString: base, connectionTimeoutMillis: 3_000 });
  try {
    await admin.connect();
  } catch (error) {
    await admin.end().catch(() => {});
    if (process.env.REQUIRE_POSTGRES === '1')
      throw new Error(`REQUIRE_POSTGRES=1 but PostgreSQL does not answer: ${(error as Error).message}`);
    console.warn(
      `\n!!! NO POSTGRESQL (${(error as Error).message}): set POSTGRES_URL; PostgreSQL-backed tests are SKIPPED !!!\n`,
    );
    return null;
  }
  const name = `cpgw_test_${label}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return {
    name,
    url: withDatabase(base, name),
    drop: async () => {
      const client = new pg.Client({ connectionString: base });
      await client.connect();
      try {
        // Sessions whose client is still closing end by themselves in a moment: wait for them
        // (up to 2 s) rather than terminate them, which makes a closing pg client emit an 'error'
        // nobody listens to any more (an unhandled error in the test run, seen once in CI).
        for (let i = 0; i < 40; i++) {
          const { rows } = await client.query<{ n: string }>(
            'SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1',
            [name],
          );
          if (Number(rows[0]?.n ?? 0) === 0) break;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        await client.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [
          name,
        ]);
        await client.query(`DROP DATABASE IF EXISTS ${name}`);
      } finally {
        await client.end();
      }
    },
  };
}

/** A private PostgreSQL server (its own data directory and port) a test may crash and restart. */
export interface PrivatePostgres {
  /** URL of its `postgres` database (user postgres, trust auth). */
  url: string;
  /** Stops it like a power loss (`pg_ctl stop -m immediate`: no checkpoint, crash recovery next). */
  crash(): Promise<void>;
  /** Starts it again on the same data directory and port; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it and deletes its data directory. */
  destroy(): Promise<void>;
}

function postgresBin(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : null;
}

/**
 * A private server from the installed PostgreSQL binaries (run as user postgres when we are
 * root: initdb refuses root), or null when there are none (REQUIRE_POSTGRES=1: an error).
 */
export async function startPrivatePostgres(): Promise<PrivatePostgres | null> {
  const bin = postgresBin();
  if (!bin) {
    if (process.env.REQUIRE_POSTGRES === '1')
      throw new Error('REQUIRE_POSTGRES=1 but no PostgreSQL binaries');
    console.warn('\n!!! NO PostgreSQL binaries: private-server tests are SKIPPED !!!\n');
    return null;
  }
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'cpgw-pg-'));
  if (asRoot) spawnSync('chown', ['postgres:postgres', dir]);
  const run = (args: string[]) => {
    const [cmd, ...rest] = args;
    const r = asRoot
      ? spawnSync('runuser', ['-u', 'postgres', '--', join(bin, cmd!), ...rest], { encoding: 'utf8' })
      : spawnSync(join(bin, cmd!), rest, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${cmd} failed (${r.status}): ${r.stderr || r.stdout}`);
  };
  const port = await freePort();
  const data = join(dir, 'data');
  run(['initdb', '-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on`;
  const start = async () => run(['pg_ctl', '-D', data, '-o', options, '-l', join(dir, 'log'), '-w', 'start']);
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start,
    crash: async () => run(['pg_ctl', '-D', data, '-m', 'immediate', 'stop']),
    destroy: async () => {
      try {
        run(['pg_ctl', '-D', data, '-m', 'immediate', 'stop']);
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
