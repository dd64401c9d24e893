// The PostgreSQL FinanceStore (src/finance/pg-finance-store.ts) against the shared finance
// contract, on a database created for this file (migrated by the money store's open(), as the
// gateway does) and dropped at the end; the replica is a second pool on the same database. Plus
// what only it promises: the settings survive the pool closing (a restart), and they are rows
// finance can query with SQL.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgFinanceStore } from '../../src/finance/pg-finance-store.ts';
import { PgLink } from '../../src/store/postgres/pg-link.ts';
import { PostgresMoney } from '../../src/store/postgres/postgres-money.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { describeFinanceContract } from './finance-contract.ts';

const db: TestDatabase | null = await createTestDatabase('finance');
const maybe = db ? describe : describe.skip;
let admin: pg.Pool | null = null;

beforeAll(async () => {
  if (!db) return;
  const money = new PostgresMoney({ url: db.url, poolMax: 2, sweepMs: 0 });
  await money.open(); // migrates
  await money.close();
  admin = new pg.Pool({ connectionString: db.url, max: 2 });
});

afterAll(async () => {
  await admin?.end();
  await db?.drop();
});

async function reset(): Promise<void> {
  await admin!.query('ALTER TABLE cpgw.audit DROP CONSTRAINT IF EXISTS injected_fault');
  await admin!.query('DELETE FROM cpgw.budget_settings');
  await admin!.query('DELETE FROM cpgw.audit');
  await admin!.query('UPDATE cpgw.finance_settings SET version = 0');
  await admin!.query('UPDATE cpgw.audit_head SET ms = -1, seq = -1');
}

const open = () => new PgFinanceStore({ link: new PgLink({ url: db!.url, poolMax: 4 }), ownsLink: true });

const write = (limitMinor: number, expectVersion: number) => ({
  budget: {
    scope: '_global',
    period: 'month' as const,
    source: 'admin' as const,
    limitMinor,
    softMinor: null,
    version: expectVersion + 1,
    updatedBy: 'fin',
    updatedAt: 1_700_000_000_000,
    reason: 'r',
  },
  expectVersion,
  audit: {
    at: 1_700_000_000_000,
    actor: 'fin',
    role: 'finance',
    client: '::1',
    requestId: `r${expectVersion}`,
    action: 'budget_set',
    target: 'budget:_global:month',
    before: null,
    after: { limit_minor: limitMinor },
    reason: 'r',
  },
});

maybe('PgFinanceStore', () => {
  describeFinanceContract('postgres', async () => {
    await reset();
    const store = open();
    return {
      store,
      replica: async () => open(),
      // New audit rows fail their check (existing ones are kept): the insert inside the budget
      // write's transaction throws after the budget row was upserted.
      breakAudit: async () => {
        await admin!.query('ALTER TABLE cpgw.audit ADD CONSTRAINT injected_fault CHECK (false) NOT VALID');
      },
      close: () => store.close(),
    };
  });

  it('keeps budgets and the audit trail across pools (a restart), as queryable rows', async () => {
    await reset();
    const first = open();
    expect(await first.writeBudget(write(500, 0))).toMatchObject({ ok: true, settingsVersion: 1 });
    expect(await first.writeBudget(write(700, 1))).toMatchObject({ ok: true, settingsVersion: 2 });
    await first.close();
    const second = open();
    try {
      expect(await second.readBudgets()).toMatchObject({
        settingsVersion: 2,
        budgets: [{ scope: '_global', period: 'month', limitMinor: 700, version: 2, source: 'admin' }],
      });
      const page = await second.readAudit({ from: 0, to: Number.MAX_SAFE_INTEGER, limit: 10 });
      expect(page.entries.map((e) => e.requestId)).toEqual(['r0', 'r1']);
      const { rows } = await admin!.query(
        'SELECT b.limit_minor::int AS limit, a.actor, a.action FROM cpgw.budget_settings b, cpgw.audit a ORDER BY a.ms, a.seq',
      );
      expect(rows).toEqual([
        { limit: 700, actor: 'fin', action: 'budget_set' },
        { limit: 700, actor: 'fin', action: 'budget_set' },
      ]);
    } finally {
      await second.close();
    }
  });
});
