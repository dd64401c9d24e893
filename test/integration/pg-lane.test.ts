// The PostgreSQL session lane (src/store/postgres/pg-lane.ts) against a real server: a statement
// asked for while a held session is idle goes out on the same turn (pg-pool would wait for
// process.nextTick, after every promise job queued before it); sessions are reused, bounded by
// the pool and given to its waiters; a held session whose connection is cut is dropped without
// crashing the process and the next statement runs on a new one; close() ends with none held.
import pg from 'pg';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { PgLink } from '../../src/store/postgres/pg-link.ts';
import { StoreUnavailableError } from '../../src/store/store.ts';
import { createTestDatabase } from '../helpers/postgres.ts';
import { eventually } from '../helpers/redis.ts';

const db = await createTestDatabase('pg_lane');
afterAll(async () => {
  await db?.drop();
});

const pidOf = async (link: PgLink) =>
  Number((await link.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);

(db ? describe : describe.skip)('PgLink session lane', () => {
  it('sends a statement on the turn it is asked for once a session is held, and reuses it', async () => {
    const link = new PgLink({ url: db!.url, onError: () => {} });
    try {
      const first = await pidOf(link);
      expect(link.heldSessions).toBe(1);
      const submit = vi.spyOn(pg.Client.prototype, 'query');
      try {
        const asked = link.query('SELECT 1 AS one');
        // No await between: pool.query would only connect on a later tick.
        expect(submit).toHaveBeenCalledTimes(1);
        expect((await asked).rows[0]).toEqual({ one: 1 });
      } finally {
        submit.mockRestore();
      }
      for (let i = 0; i < 5; i++) expect(await pidOf(link)).toBe(first);
      expect(link.heldSessions).toBe(1);
    } finally {
      await link.close();
    }
  });

  it('holds at most the pool bound; statements beyond it wait for a session and all finish', async () => {
    const link = new PgLink({ url: db!.url, poolMax: 2, onError: () => {} });
    try {
      const pids = await Promise.all(
        Array.from({ length: 7 }, () =>
          link
            .query<{ pid: number }>('SELECT pg_backend_pid() AS pid, pg_sleep(0.03)')
            .then((r) => r.rows[0]!.pid),
        ),
      );
      expect(pids).toHaveLength(7);
      expect(new Set(pids).size).toBeLessThanOrEqual(2);
      expect(link.heldSessions).toBeLessThanOrEqual(2);
      expect(link.pool.totalCount).toBeLessThanOrEqual(2);
      expect(link.pool.waitingCount).toBe(0);
    } finally {
      await link.close();
    }
  });

  it('drops a held session whose connection is cut, reports it once, and goes on on a new one', async () => {
    const errors: unknown[] = [];
    const link = new PgLink({ url: db!.url, onError: (e) => errors.push(e) });
    const admin = new pg.Client({ connectionString: db!.url });
    await admin.connect();
    try {
      const before = await pidOf(link);
      expect(link.heldSessions).toBe(1);
      await admin.query('SELECT pg_terminate_backend($1)', [before]);
      // The idle held session learns of it from its socket: dropped, not thrown at the process.
      await eventually(async () => expect(link.heldSessions).toBe(0), 5_000);
      expect(errors.length).toBeGreaterThanOrEqual(1);
      const after = await pidOf(link);
      expect(after).not.toBe(before);
      expect(link.heldSessions).toBe(1);
    } finally {
      await admin.end();
      await link.close();
    }
  });

  it('a statement on a session cut while it runs fails as unavailable; the next one runs', async () => {
    const link = new PgLink({ url: db!.url, onError: () => {} });
    const admin = new pg.Client({ connectionString: db!.url });
    await admin.connect();
    try {
      const pid = await pidOf(link);
      // Its failure is taken at once: it comes while the test still awaits the terminate, and a
      // rejection nobody has taken by then is reported as unhandled.
      const slow = link.query('SELECT pg_sleep(5)').then(
        () => null,
        (error: unknown) => error,
      );
      await eventually(async () => {
        const { rows } = await admin.query(
          'SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND query LIKE $2',
          [pid, '%pg_sleep(5)%'],
        );
        expect(rows).toHaveLength(1);
      }, 5_000);
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      expect(await slow).toBeInstanceOf(StoreUnavailableError);
      expect(link.heldSessions).toBe(0);
      expect(await pidOf(link)).not.toBe(pid);
    } finally {
      await admin.end();
      await link.close();
    }
  });

  it('close() gives back a session still running a statement once it finishes, and ends', async () => {
    const link = new PgLink({ url: db!.url, onError: () => {} });
    await pidOf(link);
    const running = link.query('SELECT pg_sleep(0.1) AS slept');
    const closed = link.close();
    await expect(running).resolves.toBeDefined();
    await closed;
    expect(link.heldSessions).toBe(0);
    expect(link.pool.totalCount).toBe(0);
  });
});
