// The FinanceStore contract (src/finance/finance-store.ts), run over every backend by
// memory-finance-store.test.ts and redis-finance-store.test.ts: budget writes compare the version
// and append their audit entry in one step (a refused compare writes neither), concurrent writers
// on one version: exactly one wins and exactly one entry is written, the settings version moves
// with every write, audit ids are ordered and never go back, cursors page without gaps or
// repeats, filters apply, entries older than 400 days go on the next append.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AUDIT_RETENTION_MS,
  type AuditRecord,
  type FinanceStore,
  type StoredBudget,
} from '../../src/finance/finance-store.ts';

export interface FinanceHarness {
  store: FinanceStore;
  /** Makes the audit append inside the next writes fail (a fault between the budget and its entry). */
  breakAudit(): Promise<void>;
  /** Another handle on the same storage (another replica), when the backend has one. */
  replica?: () => Promise<FinanceStore>;
  close(): Promise<void>;
}

const T0 = Date.parse('2026-03-02T09:00:00Z');

function audit(over: Partial<AuditRecord> = {}): AuditRecord {
  return {
    at: T0,
    actor: 'fin',
    role: 'finance',
    client: '127.0.0.1',
    requestId: 'req-1',
    action: 'budget_set',
    target: 'budget:crm:day',
    before: null,
    after: { limit_minor: 100 },
    reason: 'quarter close',
    ...over,
  };
}

function budget(over: Partial<StoredBudget> = {}): StoredBudget {
  return {
    scope: 'crm',
    period: 'day',
    source: 'admin',
    limitMinor: 100,
    softMinor: null,
    version: 1,
    updatedBy: 'fin',
    updatedAt: T0,
    reason: 'quarter close',
    ...over,
  };
}

export function describeFinanceContract(name: string, open: () => Promise<FinanceHarness>): void {
  describe(`FinanceStore contract: ${name}`, () => {
    let h: FinanceHarness;
    let store: FinanceStore;
    beforeEach(async () => {
      h = await open();
      store = h.store;
    });
    afterEach(() => h.close());

    it('starts empty at settings version 0', async () => {
      expect(await store.settingsVersion()).toBe(0);
      expect(await store.readBudgets()).toEqual({ settingsVersion: 0, budgets: [] });
      expect(await store.readBudget('crm', 'day')).toBeNull();
      expect(await store.readAudit({ from: 0, to: Number.MAX_SAFE_INTEGER, limit: 10 })).toEqual({
        entries: [],
        next: null,
      });
    });

    it('a write stores the budget, appends its entry and bumps the settings version, together', async () => {
      const result = await store.writeBudget({ budget: budget(), expectVersion: 0, audit: audit() });
      expect(result).toMatchObject({ ok: true, settingsVersion: 1 });
      expect(await store.readBudget('crm', 'day')).toEqual(budget());
      const page = await store.readAudit({ from: 0, to: T0 + 1, limit: 10 });
      expect(page.entries).toEqual([{ ...audit(), id: (result as { auditId: string }).auditId }]);
      expect(await store.readBudgets()).toEqual({ settingsVersion: 1, budgets: [budget()] });
    });

    it('a stale version writes nothing: no budget change, no entry, same settings version', async () => {
      await store.writeBudget({ budget: budget(), expectVersion: 0, audit: audit() });
      const stale = await store.writeBudget({
        budget: budget({ limitMinor: 5, version: 1 }),
        expectVersion: 0,
        audit: audit({ requestId: 'req-stale' }),
      });
      expect(stale).toEqual({ ok: false, current: budget() });
      expect(await store.readBudget('crm', 'day')).toEqual(budget());
      expect(await store.settingsVersion()).toBe(1);
      const page = await store.readAudit({ from: 0, to: T0 + 1, limit: 10 });
      expect(page.entries.map((e) => e.requestId)).toEqual(['req-1']);
      // Nothing stored yet for another budget: a version other than 0 is stale too.
      expect(
        await store.writeBudget({
          budget: budget({ scope: '_global', version: 4 }),
          expectVersion: 3,
          audit: audit(),
        }),
      ).toEqual({ ok: false, current: null });
    });

    it('concurrent writers on one version: exactly one wins and exactly one entry is written', async () => {
      const other = h.replica ? await h.replica() : store;
      try {
        const results = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            (i % 2 ? other : store).writeBudget({
              budget: budget({ limitMinor: i }),
              expectVersion: 0,
              audit: audit({ requestId: `r${i}` }),
            }),
          ),
        );
        const winners = results.flatMap((r, i) => (r.ok ? [i] : []));
        expect(winners).toHaveLength(1);
        const page = await store.readAudit({ from: 0, to: T0 + 1, limit: 100 });
        expect(page.entries.map((e) => e.requestId)).toEqual([`r${winners[0]}`]);
        expect((await store.readBudget('crm', 'day'))?.limitMinor).toBe(winners[0]);
        expect(await other.settingsVersion()).toBe(1);
      } finally {
        if (other !== store) await other.close();
      }
    });

    it('a fault while appending the entry leaves neither: no budget, no version bump', async () => {
      await h.breakAudit();
      await expect(
        store.writeBudget({ budget: budget(), expectVersion: 0, audit: audit() }),
      ).rejects.toThrow();
      expect(await store.readBudget('crm', 'day')).toBeNull();
      expect(await store.settingsVersion()).toBe(0);
      expect((await store.readBudgets()).budgets).toEqual([]);
    });

    it('refuses a malformed write before storing anything', async () => {
      await expect(
        store.writeBudget({ budget: budget({ limitMinor: -1 }), expectVersion: 0, audit: audit() }),
      ).rejects.toThrow(RangeError);
      await expect(
        store.writeBudget({ budget: budget({ version: 3 }), expectVersion: 0, audit: audit() }),
      ).rejects.toThrow(RangeError);
      expect(await store.settingsVersion()).toBe(0);
    });

    it('audit ids are ordered and never go back, even for an entry with an earlier time', async () => {
      const a = await store.appendAudit(audit({ at: T0 + 10, requestId: 'a' }));
      const b = await store.appendAudit(audit({ at: T0 + 10, requestId: 'b' }));
      const c = await store.appendAudit(audit({ at: T0 + 5, requestId: 'c' }));
      const d = await store.appendAudit(audit({ at: T0 + 20, requestId: 'd' }));
      expect([a.id, b.id, c.id, d.id]).toEqual([
        `${T0 + 10}-0`,
        `${T0 + 10}-1`,
        `${T0 + 10}-2`,
        `${T0 + 20}-0`,
      ]);
      // The entry keeps its own time; only the id is clamped.
      expect(c.at).toBe(T0 + 5);
    });

    it('pages by cursor without gaps or repeats, within [from, to), with filters', async () => {
      for (let i = 0; i < 25; i++)
        await store.appendAudit(
          audit({
            at: T0 + i * 1000,
            requestId: `q${i}`,
            actor: i % 3 === 0 ? 'ops' : 'fin',
            action: i % 2 ? 'cache_purge' : 'budget_set',
          }),
        );
      const seen: string[] = [];
      let after: string | undefined;
      for (let pages = 0; pages < 10; pages++) {
        const page = await store.readAudit({
          from: T0 + 2000,
          to: T0 + 22_000,
          limit: 7,
          ...(after ? { after } : {}),
        });
        seen.push(...page.entries.map((e) => e.requestId));
        if (page.next === null) break;
        after = page.next;
      }
      expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => `q${i + 2}`));
      const ops = await store.readAudit({ from: 0, to: T0 + 60_000, limit: 100, actor: 'ops' });
      expect(ops.entries.map((e) => e.requestId)).toEqual([
        'q0',
        'q3',
        'q6',
        'q9',
        'q12',
        'q15',
        'q18',
        'q21',
        'q24',
      ]);
      const purges = await store.readAudit({
        from: 0,
        to: T0 + 60_000,
        limit: 2,
        actor: 'fin',
        action: 'cache_purge',
      });
      expect(purges.entries.map((e) => e.requestId)).toEqual(['q1', 'q5']);
      expect(purges.next).toBe(purges.entries[1]!.id);
      // An exact last page says so: no cursor to an empty page.
      const exact = await store.readAudit({ from: 0, to: T0 + 60_000, limit: 9, actor: 'ops' });
      expect(exact.next).toBeNull();
    });

    it('keeps entries 400 days: older ones go on the next append', async () => {
      await store.appendAudit(audit({ at: T0, requestId: 'old' }));
      await store.appendAudit(audit({ at: T0 + AUDIT_RETENTION_MS - 1, requestId: 'kept' }));
      let all = await store.readAudit({ from: 0, to: Number.MAX_SAFE_INTEGER, limit: 10 });
      expect(all.entries.map((e) => e.requestId)).toEqual(['old', 'kept']);
      await store.appendAudit(audit({ at: T0 + AUDIT_RETENTION_MS + 1, requestId: 'new' }));
      all = await store.readAudit({ from: 0, to: Number.MAX_SAFE_INTEGER, limit: 10 });
      expect(all.entries.map((e) => e.requestId)).toEqual(['kept', 'new']);
    });

    it('keeps before and after as written, nulls included', async () => {
      const entry = await store.appendAudit(
        audit({ before: { limit_minor: null, soft_minor: 5 }, after: null, reason: null }),
      );
      const page = await store.readAudit({ from: 0, to: T0 + 1, limit: 1 });
      expect(page.entries).toEqual([entry]);
      expect(page.entries[0]).toMatchObject({ before: { limit_minor: null, soft_minor: 5 }, after: null });
    });
  });
}
