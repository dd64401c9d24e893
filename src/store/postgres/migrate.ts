// Applies the money schema's migrations (migrations.ts) to a database: under a session advisory
// lock, so replicas starting together migrate once and the others wait; each migration in its
// own transaction together with its row in cpgw.schema_migrations. A database whose schema is
// newer than this code knows is refused (an older gateway must not write to it).
//
// Must never: apply a migration twice, run without the lock, or touch anything outside `cpgw`.
import type pg from 'pg';
import { MIGRATIONS, SCHEMA_VERSION } from './migrations.ts';

/** pg_advisory_lock key of the migration step (an arbitrary constant: "cpgw" in ASCII). */
const MIGRATION_LOCK = 0x63706777;

export class SchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SchemaError';
  }
}

export interface MigrateResult {
  /** Version before. */
  from: number;
  /** Version after. */
  to: number;
  applied: number[];
}

async function currentVersion(client: pg.PoolClient): Promise<number> {
  const { rows } = await client.query<{ v: number | null }>(
    'SELECT max(version)::int AS v FROM cpgw.schema_migrations',
  );
  return rows[0]?.v ?? 0;
}

function newerError(found: number): SchemaError {
  return new SchemaError(
    `the PostgreSQL schema is at version ${found}, newer than this gateway knows (${SCHEMA_VERSION}): run a gateway of that version or newer`,
  );
}

/**
 * Brings the schema up to SCHEMA_VERSION. With `apply` false, only checks: throws SchemaError
 * when the schema is behind or ahead.
 */
export async function migrate(pool: pg.Pool, apply = true): Promise<MigrateResult> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await client.query('CREATE SCHEMA IF NOT EXISTS cpgw');
      await client.query(
        `CREATE TABLE IF NOT EXISTS cpgw.schema_migrations (
           version integer PRIMARY KEY,
           name text NOT NULL,
           applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      const from = await currentVersion(client);
      if (from > SCHEMA_VERSION) throw newerError(from);
      const todo = MIGRATIONS.filter((m) => m.version > from);
      if (!apply && todo.length > 0)
        throw new SchemaError(
          `the PostgreSQL schema is at version ${from}, this gateway needs ${SCHEMA_VERSION}: run cpgw migrate`,
        );
      const applied: number[] = [];
      for (const m of todo) {
        await client.query('BEGIN');
        try {
          await client.query(m.sql);
          await client.query('INSERT INTO cpgw.schema_migrations (version, name) VALUES ($1, $2)', [
            m.version,
            m.name,
          ]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK').catch(() => {});
          throw error;
        }
        applied.push(m.version);
      }
      return { from, to: Math.max(from, SCHEMA_VERSION), applied };
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {});
    }
  } finally {
    client.release();
  }
}
