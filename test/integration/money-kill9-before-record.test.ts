// Issue 33, kill -9 between a paid answer and its record: a real `cpgw start` process (money on
// PostgreSQL, hot state in memory) in front of a real `cpgw emulator` process. The test holds
// `cpgw.claims` locked (only record_charge writes it), so the gateway answers a paid read of a
// new company while its record waits; the gateway is then killed with SIGKILL, its PostgreSQL
// sessions ended (the waiting record_charge with them: it never commits), and the lock let go.
// A second gateway on the same database finds the pending entry the first wrote before its call,
// once its lease ran out, and its reconciler replays the key.
// Proves: the app got its paid answer (charged the amount) before the record; after the kill the
// charge is booked exactly once (gateway ledger = emulator ledger, count and amount, the entry
// marked reconciled), nothing pending, nothing reserved, spend = what was charged.
// A graceful stop (SIGTERM) right after such an answer waits for the record: it is applied by the
// stopping gateway itself, not left to a reconciler.
// On the old order (the answer after the record) the read never answers while the lock is held.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Child, startCpgw, stopCpgw } from '../../bench/cpgw-process.ts';
import { newToken, tokenHash } from '../../src/auth/tokens.ts';
import { PostgresMoney } from '../../src/store/postgres/postgres-money.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import type { AdminBudgets, AdminLedger, EmulatorLedger } from '../helpers/admin-views.ts';
import { envWithoutCpgw, startEmulatorProcess } from '../helpers/child-process.ts';
import { UPSTREAM_KEY } from '../helpers/gateway-harness.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.ts';

const PRICE = 9_900;
const LISTENING = /listening on (http:\/\/[^\s)]+)/;

const db: TestDatabase | null = await createTestDatabase('kill9_record');
const maybe = db ? describe : describe.skip;

afterAll(async () => {
  await db?.drop();
});

maybe('kill -9 after a paid answer, before its record', () => {
  const token = newToken();
  const adminToken = newToken();
  const children: Child[] = [];
  let dir = '';
  let emuUrl = '';
  let config = '';

  beforeAll(async () => {
    const money = new PostgresMoney({ url: db!.url, sweepMs: 0 });
    await money.open();
    await money.close();
    dir = await mkdtemp(join(tmpdir(), 'cpgw-kill9-record-'));
    const emu = await startEmulatorProcess(UPSTREAM_KEY);
    children.push(emu.child);
    emuUrl = emu.url;
    config = join(dir, 'gateway.yaml');
    // Short leases and a fast reconciler loop only to keep the test short.
    await writeFile(
      config,
      [
        'log:',
        '  level: warn',
        'limits:',
        '  key: { burst: 60 }',
        'cost:',
        '  leaseMs: 1000',
        '  reconcileIntervalMs: 200',
        'admin:',
        `  tokenHash: "${tokenHash(adminToken)}"`,
        'apps:',
        '  - name: alpha',
        `    tokenHash: "${tokenHash(token)}"`,
        '    scopes: [read:companies]',
        `    budgets: { day: { limitMinor: ${10 * PRICE} } }`,
        '',
      ].join('\n'),
    );
  }, 30_000);

  afterAll(async () => {
    for (const child of children) await stopCpgw(child).catch(() => {});
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const start = async (name: string) => {
    const started = await startCpgw(
      ['start'],
      envWithoutCpgw({
        CPGW_CONFIG: config,
        CPGW_PORT: '0',
        CPGW_UPSTREAM_URL: emuUrl,
        CPGW_UPSTREAM_API_KEY: UPSTREAM_KEY,
        CPGW_POSTGRES_URL: db!.url,
        CPGW_STATE_DIR: join(dir, `state-${name}`),
      }),
      LISTENING,
    );
    children.push(started.child);
    return { child: started.child, url: started.match[1]! };
  };
  const emu = async <T>(path: string): Promise<T> =>
    (await (
      await fetch(`${emuUrl}/_emulator${path}`, { headers: { authorization: `Bearer ${UPSTREAM_KEY}` } })
    ).json()) as T;

  it('the answer came first; the reconciler books the charge once', async () => {
    const a = await start('a');
    const [inn] = knownInns(1, 7800);
    const holder = new pg.Client({ connectionString: db!.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE cpgw.claims IN EXCLUSIVE MODE');
      const answer = fetch(`${a.url}/v1/companies/${inn}`, { headers: { authorization: `Bearer ${token}` } });
      let timer: NodeJS.Timeout | undefined;
      const res = await Promise.race([
        answer,
        new Promise<'pending'>((resolve) => {
          timer = setTimeout(() => resolve('pending'), 5_000);
        }),
      ]);
      clearTimeout(timer);
      expect(res, 'the paid answer waited for its record').not.toBe('pending');
      expect((res as Response).status).toBe(200);
      expect((res as Response).headers.get('x-charged-minor')).toBe(String(PRICE));
      await (res as Response).arrayBuffer();
      // The record goes out after the answer: on a loaded machine the kill below could come
      // before it reaches PostgreSQL (then no session would be left to end). Wait until it waits.
      const since = Date.now();
      for (;;) {
        const { rows: waiting } = await holder.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        );
        if (waiting[0].n > 0) break;
        expect(Date.now() - since, 'the record never waited for the lock').toBeLessThan(5_000);
        await new Promise((r) => setTimeout(r, 20));
      }

      // Killed with the record waiting for the lock: its session ended too, so it never commits.
      a.child.process.kill('SIGKILL');
      await new Promise((r) => a.child.process.once('exit', r));
      const { rows: ended } = await holder.query(
        'SELECT count(*)::int AS n FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()) t',
      );
      expect(ended[0].n).toBeGreaterThan(0);
      const { rows: booked } = await holder.query('SELECT count(*)::int AS n FROM cpgw.ledger');
      expect(booked[0].n).toBe(0);
      const { rows: pending } = await holder.query('SELECT count(*)::int AS n FROM cpgw.pending_charges');
      expect(pending[0].n).toBe(1);
      await holder.query('COMMIT');
    } finally {
      await holder.end().catch(() => {});
    }
    expect((await emu<EmulatorLedger>('/ledger')).totals).toMatchObject({ count: 1, amount_minor: PRICE });

    // Another gateway on the same database: its reconciler resolves A's entry by replaying the key.
    const b = await start('b');
    const admin = async <T>(path: string): Promise<T> =>
      (await (
        await fetch(`${b.url}${path}`, { headers: { authorization: `Bearer ${adminToken}` } })
      ).json()) as T;
    const since = Date.now();
    let view!: AdminLedger;
    for (;;) {
      view = await admin<AdminLedger>('/admin/ledger');
      if (view.pending.length === 0 && view.count > 0) break;
      expect(Date.now() - since, 'not reconciled within 20 s').toBeLessThan(20_000);
      await new Promise((r) => setTimeout(r, 100));
    }
    // Give a second (wrong) record time to show up.
    await new Promise((r) => setTimeout(r, 500));
    view = await admin<AdminLedger>('/admin/ledger');
    expect(view.count).toBe(1);
    expect(view.total_minor).toBe(PRICE);
    expect(view.entries[0]).toMatchObject({ inn, amount_minor: PRICE, reconciled: true });
    expect((await emu<EmulatorLedger>('/ledger')).totals).toMatchObject({ count: 1, amount_minor: PRICE });
    const budgets = await admin<AdminBudgets>('/admin/budgets');
    for (const row of [...budgets.budgets.alpha!, ...budgets.budgets['*global*']!])
      expect(row.reserved_minor).toBe(0);
    expect(budgets.budgets.alpha!.find((r) => r.period === 'month')!.spent_minor).toBe(PRICE);
    await stopCpgw(b.child);
  }, 60_000);

  it('a graceful stop (SIGTERM) waits for a record still running after its answer', async () => {
    const c = await start('c');
    const [inn] = knownInns(1, 7850);
    const holder = new pg.Client({ connectionString: db!.url });
    await holder.connect();
    let exited = false;
    const exit = new Promise<void>((resolve) =>
      c.child.process.once('exit', () => {
        exited = true;
        resolve();
      }),
    );
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE cpgw.claims IN EXCLUSIVE MODE');
      const res = await fetch(`${c.url}/v1/companies/${inn}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-charged-minor')).toBe(String(PRICE));
      await res.arrayBuffer();
      c.child.process.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 700));
      expect(exited, 'the gateway stopped before its record was applied').toBe(false);
      await holder.query('COMMIT');
    } finally {
      await holder.end().catch(() => {});
    }
    await exit;
    expect(c.child.process.exitCode).toBe(0);
    const check = new pg.Client({ connectionString: db!.url });
    await check.connect();
    try {
      const { rows } = await check.query(
        "SELECT count(*)::int AS n, bool_or((record->>'reconciled')::boolean) AS reconciled FROM cpgw.ledger WHERE inn = $1",
        [inn],
      );
      expect(rows[0]).toMatchObject({ n: 1, reconciled: null });
      const { rows: pending } = await check.query('SELECT count(*)::int AS n FROM cpgw.pending_charges');
      expect(pending[0].n).toBe(0);
    } finally {
      await check.end();
    }
  }, 60_000);
});
