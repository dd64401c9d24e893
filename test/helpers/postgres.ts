// Where PostgreSQL-backed tests find their PostgreSQL: POSTGRES_URL, default
// postgres://postgres@127.0.0.1:5432/postgres (trust auth). Each test file creates its own
// database with a unique name and drops it (and only it) at the end. When none answers the tests
// are skipped with a loud notice, unless REQUIRE_POSTGRES=1 (CI), where that fails the run.
import pg from 'pg';

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
