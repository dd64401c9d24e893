// The money roles on PostgreSQL (src/store/postgres/) against the money parts of the shared
// contract (budgets, ledger, charges), hot roles in memory, in real time (holds and counters
// expire on the database clock), with a replica on a second pool; plus what only PostgreSQL
// promises: two replicas racing one cap never overshoot it, ledger ids stay ordered across
// them, the schema migrates once under concurrent starts, a newer schema and a wrong password
// are refused in one line without the password, and an unreachable server is
// StoreUnavailableError. The database is created for this file and dropped at the end.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../src/clock.ts';
import type { BudgetCounterSpec, PendingCharge } from '../../src/store/index.ts';
import { MemoryStore, StoreUnavailableError } from '../../src/store/index.ts';
import { MIGRATIONS, SCHEMA_VERSION } from '../../src/store/postgres/migrations.ts';
import { MoneyStoreError, PostgresMoney } from '../../src/store/postgres/postgres-money.ts';
import { SplitStore } from '../../src/store/split-store.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { MONEY_PARTS, runStoreContract } from './contract-harness.ts';

const db: TestDatabase | null = await createTestDatabase('contract');
const maybe = db ? describe : describe.skip;
let admin: pg.Pool | null = null;

/** A dossier read's pending entry of app crm, held on `counters` (the tests' shapes differ only there). */
function pendingEntry(key: string, estimateMinor: number, counters: string[]): PendingCharge {
  return {
    key,
    requestId: `req-${key}`,
    app: 'crm',
    operation: 'company',
    kind: 'dossier',
    inn: '7707083893',
    estimateMinor,
    at: Date.now(),
    method: 'GET',
    target: '/v1/company/7707083893',
    body: null,
    opens: 'dossier',
    counters,
    counterTtlMs: 60_000,
    owner: 'replica',
    leaseUntil: Date.now() + 10_000,
    reconcileAttempts: 0,
  };
}

function split(url: string, poolMax = 10): SplitStore {
  const money = new PostgresMoney({ url, poolMax, sweepMs: 0 });
  return new SplitStore(new MemoryStore({ clock: systemClock, cacheMaxBytes: 10 * 1024 * 1024 }), money);
}

async function openSplit(url: string, poolMax = 10): Promise<SplitStore> {
  const store = split(url, poolMax);
  await store.open();
  return store;
}

const MONEY_TABLES =
  'cpgw.ledger, cpgw.counters, cpgw.holds, cpgw.pending_charges, cpgw.claims, cpgw.windows';

async function emptyMoney(): Promise<void> {
  for (const table of MONEY_TABLES.split(', ')) await admin!.query(`DELETE FROM ${table}`);
  await admin!.query('UPDATE cpgw.ledger_head SET ms = -1, seq = -1');
}

beforeAll(async () => {
  if (!db) return;
  admin = new pg.Pool({ connectionString: db.url, max: 2 });
  const first = await openSplit(db.url); // migrates
  await first.close();
});

afterAll(async () => {
  await admin?.end();
  await db?.drop();
});

maybe('PostgreSQL money', () => {
  const url = db?.url ?? '';

  runStoreContract(
    'memory hot + postgres money',
    async () => {
      await emptyMoney();
      const store = await openSplit(url);
      return {
        store,
        pass: (ms) => new Promise((r) => setTimeout(r, ms)),
        exactTime: false,
        clock: new ManualClock(Date.now()),
        replica: () => openSplit(url),
        close: () => store.close(),
      };
    },
    MONEY_PARTS,
  );

  describe('two replicas (two pools) on one database', () => {
    const DAY = 'app:crm:day:2026-01-15';
    const specs = (cap: number): BudgetCounterSpec[] => [
      { key: DAY, limitMinor: cap, ttlMs: 60_000 },
      { key: 'global:day:2026-01-15', limitMinor: null, ttlMs: 60_000 },
    ];
    const pending = (key: string, estimateMinor: number): PendingCharge =>
      pendingEntry(key, estimateMinor, [DAY, 'global:day:2026-01-15']);

    it('60 openCharge racing one cap across both: exactly the cap is held, never more', async () => {
      await emptyMoney();
      const a = await openSplit(url, 5);
      const b = await openSplit(url, 5);
      try {
        const answers = await Promise.all(
          Array.from({ length: 60 }, (_, i) =>
            (i % 2 ? a : b).openCharge(pending(`k${i}`, 100), specs(1_050)),
          ),
        );
        expect(answers.filter((r) => r.ok)).toHaveLength(10);
        expect((await a.readCounters([DAY]))[0]).toEqual({ key: DAY, spentMinor: 0, reservedMinor: 1_000 });
        expect(await b.pendingCharges()).toHaveLength(10);
        // Records (actual 99 each) and new opens race too: spend + holds stay within the cap.
        const open = (await a.pendingCharges()).map((p) => p.key);
        const mixed = await Promise.all([
          ...open.map((key, i) =>
            (i % 2 ? b : a).recordCharge({
              key,
              amountMinor: 99,
              entry: { at: Date.now(), app: 'crm', amountMinor: 99, idempotencyKey: key },
              counters: [DAY, 'global:day:2026-01-15'],
              counterTtlMs: 60_000,
            }),
          ),
          ...Array.from({ length: 20 }, (_, i) =>
            (i % 2 ? a : b).openCharge(pending(`n${i}`, 100), specs(1_050)),
          ),
        ]);
        const reopened = mixed.slice(open.length).filter((r) => 'ok' in r && r.ok).length;
        const [day] = await b.readCounters([DAY]);
        expect(day!.spentMinor).toBe(990);
        expect(day!.spentMinor + day!.reservedMinor).toBeLessThanOrEqual(1_050);
        expect(day!.reservedMinor).toBe(reopened * 100);
        expect(await a.readLedger(0, Date.now() + 60_000)).toHaveLength(10);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it('ledger ids stay unique and time-ordered under concurrent appends from both', async () => {
      await emptyMoney();
      const a = await openSplit(url, 4);
      const b = await openSplit(url, 4);
      try {
        const t0 = Date.now();
        const ids = await Promise.all(
          Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).appendLedger({ at: t0 + (i % 3), n: i })),
        );
        expect(new Set(ids).size).toBe(40);
        const read = await a.readLedger(0, t0 + 10);
        expect(read).toHaveLength(40);
        const order = read.map((r) => r.id!.split('-').map(Number) as [number, number]);
        for (let i = 1; i < order.length; i++) {
          const [pm, ps] = order[i - 1]!;
          const [m, s] = order[i]!;
          expect(m > pm || (m === pm && s > ps)).toBe(true);
        }
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });
  });

  describe('schema and connection', () => {
    it('migrates once when replicas start together, and the ledger is plain SQL for finance', async () => {
      const stores = await Promise.all(Array.from({ length: 3 }, () => openSplit(url, 2)));
      await Promise.all(stores.map((s) => s.close()));
      const { rows } = await admin!.query('SELECT version FROM cpgw.schema_migrations ORDER BY version');
      expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
      await emptyMoney();
      const store = await openSplit(url);
      try {
        await store.recordCharge({
          key: 'fin-1',
          amountMinor: 9_900,
          entry: {
            at: Date.UTC(2026, 0, 15, 9),
            app: 'crm',
            operation: 'company',
            kind: 'dossier',
            inn: '7707083893',
            amountMinor: 9_900,
            upstreamRequestId: 'up-1',
            requestId: 'req-1',
            idempotencyKey: 'fin-1',
            reconciled: true,
          },
          counters: [],
          counterTtlMs: 60_000,
        });
      } finally {
        await store.close();
      }
      const sql = await admin!.query(
        `SELECT at, app, operation, kind, inn, amount_minor, request_id, upstream_request_id,
                idempotency_key, reconciled FROM cpgw.ledger`,
      );
      expect(sql.rows).toEqual([
        {
          at: new Date(Date.UTC(2026, 0, 15, 9)),
          app: 'crm',
          operation: 'company',
          kind: 'dossier',
          inn: '7707083893',
          amount_minor: '9900',
          request_id: 'req-1',
          upstream_request_id: 'up-1',
          idempotency_key: 'fin-1',
          reconciled: true,
        },
      ]);
    });

    it('upgrades under live money: a charge opened on version 1 is recorded after version 2, its hold gone, the cap counted', async () => {
      const old = await createTestDatabase('upgrade');
      if (!old) throw new Error('no database for the upgrade test');
      const pool = new pg.Pool({ connectionString: old.url, max: 1 });
      try {
        // The schema as a version-1 gateway left it (tables and functions of migration 1 only).
        await pool.query('CREATE SCHEMA cpgw');
        await pool.query(
          'CREATE TABLE cpgw.schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
        );
        await pool.query(MIGRATIONS[0]!.sql);
        await pool.query('INSERT INTO cpgw.schema_migrations (version, name) VALUES (1, $1)', [
          MIGRATIONS[0]!.name,
        ]);
        const counters: BudgetCounterSpec[] = [
          { key: 'app:crm:day:2026-01-15', limitMinor: 19_800, ttlMs: 60_000 },
        ];
        const opened = await pool.query<{ r: string[] }>(
          'SELECT cpgw.open_charge($1, $2, $3, $4, $5, $6, $7, $8, $9) AS r',
          [
            'up-1',
            9_900,
            60_000,
            counters.map((c) => c.key),
            [19_800],
            [60_000],
            JSON.stringify({
              key: 'up-1',
              at: Date.now(),
              app: 'crm',
              kind: 'dossier',
              inn: '7707083893',
              counters: [counters[0]!.key],
            }),
            'old-replica',
            Date.now() + 10_000,
          ],
        );
        expect(opened.rows[0]!.r.map(Number)).toEqual([1, 1]);
        const store = await openSplit(old.url); // migrates to the newest version
        try {
          const { rows } = await pool.query('SELECT version FROM cpgw.schema_migrations ORDER BY version');
          expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
          expect((await store.readCounters([counters[0]!.key]))[0]).toMatchObject({
            spentMinor: 0,
            reservedMinor: 9_900,
          });
          const now = Date.now();
          const recorded = await store.recordCharge({
            key: 'up-1',
            amountMinor: 9_900,
            entry: {
              at: now,
              app: 'crm',
              operation: 'company',
              kind: 'dossier',
              inn: '7707083893',
              amountMinor: 9_900,
              idempotencyKey: 'up-1',
            },
            counters: [counters[0]!.key],
            counterTtlMs: 60_000,
            window: { inn: '7707083893', kind: 'dossier', until: now + 900_000 },
          });
          expect(recorded.recorded).toBe(true);
          expect(recorded.windows).toEqual({ dossierUntil: now + 900_000, requisitesUntil: 0 });
          expect((await store.readCounters([counters[0]!.key]))[0]).toMatchObject({
            spentMinor: 9_900,
            reservedMinor: 0,
          });
          expect(await store.pendingCharges()).toEqual([]);
          // The cap (19,800) now holds one more 9,900 and refuses the one after it.
          expect((await store.reserve({ id: 'a', amountMinor: 9_900, holdMs: 60_000, counters })).ok).toBe(
            true,
          );
          expect((await store.reserve({ id: 'b', amountMinor: 9_900, holdMs: 60_000, counters })).ok).toBe(
            false,
          );
        } finally {
          await store.close();
        }
      } finally {
        await pool.end();
        await old.drop();
      }
    });

    it('commits durably: synchronous_commit is on even when the URL asks for off', async () => {
      const money = new PostgresMoney({
        url: `${url}?options=-c%20synchronous_commit%3Doff`,
        sweepMs: 0,
      });
      try {
        const { rows } = await money.link.query<{ synchronous_commit: string }>('SHOW synchronous_commit');
        expect(rows[0]!.synchronous_commit).toBe('on');
      } finally {
        await money.close();
      }
    });

    it('tells a background sweep that fails through onError, without the password', async () => {
      const told: string[] = [];
      // A password in the URL (trust auth here ignores it): no message may carry it.
      const withPassword = new URL(url);
      withPassword.password = 's3cret-pass';
      expect(withPassword.toString()).toContain('s3cret-pass');
      const money = new PostgresMoney({
        url: withPassword.toString(),
        sweepMs: 30,
        onError: (error) => told.push((error as Error).message),
      });
      await money.open();
      try {
        // The sweep's function gone (as a botched migration would leave it): every sweep fails.
        await admin!.query('ALTER FUNCTION cpgw.sweep() RENAME TO sweep_moved');
        try {
          const deadline = Date.now() + 5_000;
          while (told.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        } finally {
          await admin!.query('ALTER FUNCTION cpgw.sweep_moved() RENAME TO sweep');
        }
        expect(told.length).toBeGreaterThanOrEqual(2);
        expect(told[0]).toMatch(/^postgres sweep failed \(.*\): function cpgw\.sweep\(\) does not exist/);
        expect(told.join('\n')).not.toContain('s3cret-pass');
      } finally {
        await money.close();
      }
    });

    it('never sends a statement on a session that is still running another, the SET of a new session included', async () => {
      // pg 8 queues a second query on a busy client with a deprecation warning (pg 9 drops the
      // queue): the SET a new session needs must finish before the session is handed out.
      const inFlight = new Map<pg.ClientBase, number>();
      let most = 0;
      const settled = (client: pg.ClientBase) => inFlight.set(client, (inFlight.get(client) ?? 1) - 1);
      const query = pg.Client.prototype.query;
      pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
        const now = (inFlight.get(this) ?? 0) + 1;
        inFlight.set(this, now);
        most = Math.max(most, now);
        const last = args.length - 1;
        const callback = args[last];
        if (typeof callback === 'function') {
          args[last] = (...result: unknown[]) => {
            settled(this);
            return (callback as (...r: unknown[]) => unknown)(...result);
          };
          return (query as (...a: unknown[]) => unknown).apply(this, args);
        }
        const out = (query as (...a: unknown[]) => unknown).apply(this, args);
        if (out instanceof Promise) out.finally(() => settled(this)).catch(() => {});
        else if (out && typeof (out as { on?: unknown }).on === 'function')
          (out as NodeJS.EventEmitter).once('end', () => settled(this)).once('error', () => settled(this));
        return out;
      } as typeof query;
      const money = new PostgresMoney({
        url: `${url}?options=-c%20synchronous_commit%3Doff`,
        poolMax: 4,
        sweepMs: 0,
      });
      try {
        // Sixteen at once on a pool of four: four new sessions, each asked for at once.
        const rows = await Promise.all(
          Array.from({ length: 16 }, () =>
            money.link.query<{ synchronous_commit: string }>(
              'SELECT current_setting($1) AS synchronous_commit, pg_sleep(0.01)',
              ['synchronous_commit'],
            ),
          ),
        );
        expect(rows.map((r) => r.rows[0]!.synchronous_commit)).toEqual(Array(16).fill('on'));
        expect(inFlight.size).toBe(4);
        expect(most).toBe(1);
      } finally {
        pg.Client.prototype.query = query;
        await money.close();
      }
    });

    it('only the release of an entry estimated 0 that held nothing commits without waiting for the WAL flush', async () => {
      // Each step as the gateway sends it (one statement), inside a transaction here so the
      // setting its commit will use can be read before the commit.
      const store = await openSplit(url);
      const client = await admin!.connect();
      const settingAfterRelease = async (key: string): Promise<string> => {
        await client.query('BEGIN');
        try {
          await client.query('SELECT cpgw.release_charge($1)', [key]);
          const { rows } = await client.query<{ synchronous_commit: string }>('SHOW synchronous_commit');
          return rows[0]!.synchronous_commit;
        } finally {
          await client.query('COMMIT');
        }
      };
      const counters: BudgetCounterSpec[] = [
        { key: 'app:crm:day:2026-01-16', limitMinor: 99_000, ttlMs: 60_000 },
      ];
      const entry = (key: string, estimateMinor: number, keys: string[]): PendingCharge =>
        pendingEntry(key, estimateMinor, keys);
      try {
        await emptyMoney();
        // In a window: estimated 0, nothing held.
        expect((await store.openCharge(entry('free', 0, [counters[0]!.key]), counters)).ok).toBe(true);
        expect(await settingAfterRelease('free')).toBe('off');
        // Estimated above 0: its hold goes durably.
        expect((await store.openCharge(entry('held', 9_900, [counters[0]!.key]), counters)).ok).toBe(true);
        expect(await settingAfterRelease('held')).toBe('on');
        expect((await store.readCounters([counters[0]!.key]))[0]).toMatchObject({ reservedMinor: 0 });
        // Estimated above 0 with no budget counter (nothing held): still durably.
        expect((await store.openCharge(entry('uncapped', 9_900, []), [])).ok).toBe(true);
        expect(await settingAfterRelease('uncapped')).toBe('on');
        // Gone already (a second release): nothing changes, nothing to hurry.
        expect(await settingAfterRelease('free')).toBe('on');
        expect(await store.pendingCharges()).toEqual([]);
        // The session's own setting is back after each commit.
        const { rows } = await client.query<{ synchronous_commit: string }>('SHOW synchronous_commit');
        expect(rows[0]!.synchronous_commit).toBe('on');
      } finally {
        client.release();
        await store.close();
      }
    });

    it('refuses a schema newer than it knows, in one line', async () => {
      const newer = SCHEMA_VERSION + 1;
      await admin!.query('INSERT INTO cpgw.schema_migrations (version, name) VALUES ($1, $2)', [
        newer,
        'future',
      ]);
      try {
        const store = split(url);
        const error = await store.open().catch((e: unknown) => e);
        await store.close();
        expect(error).toBeInstanceOf(MoneyStoreError);
        expect((error as Error).message).toContain(`version ${newer}, newer than this gateway knows`);
        expect((error as Error).message).not.toContain('\n');
      } finally {
        await admin!.query('DELETE FROM cpgw.schema_migrations WHERE version = $1', [newer]);
      }
    });

    it('a wrong password is refused in one line that never shows the password', async () => {
      // Trust auth accepts any password; a role that does not exist is refused the same way.
      const u = new URL(url);
      u.username = 'cpgw_no_such_role';
      u.password = 's3cret-Pa55word';
      const store = split(u.toString());
      const error = await store.open().catch((e: unknown) => e);
      await store.close();
      expect(error).toBeInstanceOf(MoneyStoreError);
      const message = (error as Error).message;
      expect(message).not.toContain('s3cret-Pa55word');
      expect(message).toContain('***');
      expect(message).not.toContain('\n');
    });

    it('a statement past the timeout (a counter locked elsewhere) is StoreUnavailableError', async () => {
      await emptyMoney();
      const money = new PostgresMoney({ url, statementTimeoutMs: 300, sweepMs: 0, onError: () => {} });
      const store = new SplitStore(new MemoryStore({ clock: systemClock, cacheMaxBytes: 1 << 20 }), money);
      const blocker = await admin!.connect();
      try {
        await store.addSpend(['locked'], 100, 60_000);
        await blocker.query('BEGIN');
        await blocker.query("SELECT 1 FROM cpgw.counters WHERE key = 'locked' FOR UPDATE");
        const started = Date.now();
        const error = await store
          .reserve({
            id: 'r',
            amountMinor: 1,
            counters: [{ key: 'locked', limitMinor: 1_000, ttlMs: 60_000 }],
            holdMs: 60_000,
          })
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(StoreUnavailableError);
        expect((error as Error).message).toMatch(/statement timeout/);
        expect(Date.now() - started).toBeLessThan(3_000);
        await blocker.query('ROLLBACK');
        // Nothing was held by the cancelled step; the next one goes through.
        expect((await store.readCounters(['locked']))[0]).toEqual({
          key: 'locked',
          spentMinor: 100,
          reservedMinor: 0,
        });
      } finally {
        blocker.release();
        await store.close();
      }
    });

    it('an open of 0 (an in-window read) does not wait for counters a paid call holds locked; it still meets the caps', async () => {
      await emptyMoney();
      const money = new PostgresMoney({ url, statementTimeoutMs: 500, sweepMs: 0, onError: () => {} });
      const store = new SplitStore(new MemoryStore({ clock: systemClock, cacheMaxBytes: 1 << 20 }), money);
      const blocker = await admin!.connect();
      const specs: BudgetCounterSpec[] = [
        { key: 'app:crm:day:2026-01-17', limitMinor: 1_000, ttlMs: 60_000 },
        { key: 'global:day:2026-01-17', limitMinor: null, ttlMs: 60_000 },
      ];
      const entry = (key: string, estimateMinor: number): PendingCharge =>
        pendingEntry(
          key,
          estimateMinor,
          specs.map((c) => c.key),
        );
      try {
        await store.addSpend([specs[0]!.key, specs[1]!.key], 100, 60_000);
        // A paid call's open holds both counters locked until it commits.
        await blocker.query('BEGIN');
        await blocker.query('SELECT 1 FROM cpgw.counters WHERE key = ANY ($1) FOR UPDATE', [
          specs.map((c) => c.key),
        ]);
        const started = Date.now();
        expect(await store.openCharge(entry('free', 0), specs)).toEqual({ ok: true });
        expect(Date.now() - started).toBeLessThan(400);
        // One that holds money waits for them (here: past its statement timeout).
        await expect(store.openCharge(entry('paid', 300), specs)).rejects.toBeInstanceOf(
          StoreUnavailableError,
        );
        await blocker.query('ROLLBACK');
        // Past its cap (spend above an estimate, settled late), an open of 0 is refused as before.
        await store.addSpend([specs[0]!.key], 1_000, 60_000);
        expect(await store.openCharge(entry('over', 0), specs)).toEqual({
          ok: false,
          key: specs[0]!.key,
          limitMinor: 1_000,
          spentMinor: 1_100,
          reservedMinor: 0,
        });
        expect((await store.pendingCharges()).map((p) => p.key)).toEqual(['free']);
        expect(await store.readCounters(specs.map((c) => c.key))).toEqual([
          { key: specs[0]!.key, spentMinor: 1_100, reservedMinor: 0 },
          { key: specs[1]!.key, spentMinor: 100, reservedMinor: 0 },
        ]);
      } finally {
        await blocker.query('ROLLBACK').catch(() => {});
        blocker.release();
        await store.close();
      }
    });

    it('an unreachable server is StoreUnavailableError on every money call, quickly', async () => {
      const money = new PostgresMoney({
        url: 'postgres://postgres:pw-never-shown@127.0.0.1:1/cpgw',
        statementTimeoutMs: 1_000,
        sweepMs: 0,
        onError: () => {},
      });
      const store = new SplitStore(new MemoryStore({ clock: systemClock, cacheMaxBytes: 1 << 20 }), money);
      try {
        const started = Date.now();
        await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
        await expect(store.readCounters(['x'])).rejects.toBeInstanceOf(StoreUnavailableError);
        const error = await store.appendLedger({ at: 1 }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(StoreUnavailableError);
        expect((error as Error).message).not.toContain('pw-never-shown');
        expect(Date.now() - started).toBeLessThan(5_000);
        // The hot roles keep working.
        await store.set('k', 'v', 60_000);
        expect(await store.get('k')).toBe('v');
      } finally {
        await store.close();
      }
    });
  });
});
