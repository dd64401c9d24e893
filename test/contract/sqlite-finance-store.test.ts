// The SQLite FinanceStore (src/finance/sqlite-finance-store.ts) against the shared finance
// contract, in a fresh <stateDir>/money.db per test (the handle the embedded money store opens),
// plus what only it promises: budgets and the audit trail survive closing and reopening the
// file (a restart), and a version-1 money file (before finance lived in it) is migrated in place
// with its money kept.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteFinanceStore } from '../../src/finance/sqlite-finance-store.ts';
import { MoneyDb } from '../../src/store/sqlite/sqlite-db.ts';
import { describeFinanceContract } from './finance-contract.ts';

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'cpgw-sqlite-finance-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const write = (limitMinor: number, expectVersion: number) => ({
  budget: {
    scope: 'crm',
    period: 'day' as const,
    source: 'admin' as const,
    limitMinor,
    softMinor: 50,
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
    target: 'budget:crm:day',
    before: null,
    after: { limit_minor: limitMinor },
    reason: 'r',
  },
});

describeFinanceContract('sqlite', async () => {
  const db = new MoneyDb(tempDir());
  const store = new SqliteFinanceStore(db);
  return {
    store,
    // A trigger refuses new audit rows: the insert inside the budget write's transaction throws
    // after the budget row was upserted.
    breakAudit: async () => {
      db.tx(() =>
        db.run(
          "CREATE TRIGGER injected_fault BEFORE INSERT ON audit BEGIN SELECT RAISE(ABORT, 'injected'); END",
        ),
      );
    },
    close: async () => {
      await store.close();
      db.close();
    },
  };
});

describe('SqliteFinanceStore only', () => {
  it('keeps budgets and the audit trail across a close and reopen of money.db', async () => {
    const dir = tempDir();
    const db = new MoneyDb(dir);
    const first = new SqliteFinanceStore(db);
    expect(await first.writeBudget(write(500, 0))).toMatchObject({ ok: true, settingsVersion: 1 });
    expect(await first.writeBudget(write(700, 1))).toMatchObject({ ok: true, settingsVersion: 2 });
    db.close();
    const again = new MoneyDb(dir);
    try {
      const second = new SqliteFinanceStore(again);
      expect(await second.readBudgets()).toEqual({ settingsVersion: 2, budgets: [write(700, 1).budget] });
      const page = await second.readAudit({ from: 0, to: Number.MAX_SAFE_INTEGER, limit: 10 });
      expect(page.entries.map((e) => e.requestId)).toEqual(['r0', 'r1']);
      expect((await second.writeBudget(write(9, 0))).ok).toBe(false);
    } finally {
      again.close();
    }
  });

  it('migrates a version-1 money file in place, its ledger kept', async () => {
    const dir = tempDir();
    const db = new MoneyDb(dir);
    db.tx(() => {
      db.run('INSERT INTO ledger (ms, seq, record) VALUES (1, 0, ?)', ['{"id":"1-0"}']);
      for (const table of ['budget_settings', 'finance_settings', 'audit']) db.run(`DROP TABLE ${table}`);
      db.run('PRAGMA user_version = 1');
    });
    db.close();
    const again = new MoneyDb(dir);
    try {
      expect(again.get('SELECT count(*) AS n FROM ledger')).toEqual({ n: 1 });
      expect(Number(again.get('PRAGMA user_version')?.user_version)).toBe(2);
      const store = new SqliteFinanceStore(again);
      expect(await store.writeBudget(write(1, 0))).toMatchObject({ ok: true, settingsVersion: 1 });
    } finally {
      again.close();
    }
  });
});
