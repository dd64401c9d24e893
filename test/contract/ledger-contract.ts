// The ledger role's part of the Store contract (see contract-harness.ts), run over every backend.
import { describe, expect, it } from 'vitest';
import type { ContractContext } from './contract-harness.ts';

export function describeLedgerContract(t: ContractContext): void {
  describe('ledger', () => {
    const t0 = Date.UTC(2026, 0, 15, 9, 0, 0);
    it('appends time-ordered records and reads them back by time range and limit', async () => {
      const ids: string[] = [];
      ids.push(
        await t.store.appendLedger({ at: t0, app: 'crm', amountMinor: 300, inn: '7707083893', ok: true }),
      );
      ids.push(await t.store.appendLedger({ at: t0 + 10, app: 'erp', amountMinor: 0, note: null }));
      ids.push(await t.store.appendLedger({ at: t0 + 10, app: 'erp', amountMinor: 5 }));
      ids.push(await t.store.appendLedger({ at: t0 + 20, app: 'crm', amountMinor: 7, gone: undefined }));
      expect(new Set(ids).size).toBe(4);
      const all = await t.store.readLedger(t0, t0 + 21);
      expect(all.map((r) => r.id)).toEqual(ids);
      expect(all[0]).toEqual({
        id: ids[0],
        at: t0,
        app: 'crm',
        amountMinor: 300,
        inn: '7707083893',
        ok: true,
      });
      expect(all[1]).toEqual({ id: ids[1], at: t0 + 10, app: 'erp', amountMinor: 0, note: null });
      expect(all[3]).toEqual({ id: ids[3], at: t0 + 20, app: 'crm', amountMinor: 7 });
      expect((await t.store.readLedger(t0 + 10, t0 + 20)).map((r) => r.amountMinor)).toEqual([0, 5]);
      expect((await t.store.readLedger(t0, t0 + 100, 2)).map((r) => r.id)).toEqual(ids.slice(0, 2));
      expect(await t.store.readLedger(t0 + 21, t0 + 100)).toEqual([]);
      expect(await t.store.readLedger(t0 + 20, t0 + 20)).toEqual([]);
    });

    it('keeps a late record after the later one it follows', async () => {
      const a = await t.store.appendLedger({ at: t0 + 30, n: 1 });
      const b = await t.store.appendLedger({ at: t0 + 25, n: 2 });
      const records = await t.store.readLedger(t0, t0 + 31);
      expect(records.map((r) => r.id)).toEqual([a, b]);
      expect(records.map((r) => r.at)).toEqual([t0 + 30, t0 + 25]);
      expect(b.startsWith(`${t0 + 30}-`)).toBe(true);
    });

    it('resumes exactly after a record id: same-ms records are neither skipped nor repeated', async () => {
      const base = t0 + 1000;
      const ids: string[] = [];
      // Seven records in three milliseconds (and a late one that takes the last id's time).
      for (const at of [base, base, base, base + 1, base + 1, base + 2, base + 1]) {
        ids.push(await t.store.appendLedger({ at, n: ids.length }));
      }
      const seen: string[] = [];
      let page = await t.store.readLedger(base, base + 3, 2);
      while (page.length > 0) {
        seen.push(...page.map((r) => r.id as string));
        page = await t.store.readLedgerAfter(seen[seen.length - 1]!, base + 3, 2);
      }
      expect(seen).toEqual(ids);
      // The upper bound is by id time, exclusive.
      expect((await t.store.readLedgerAfter(ids[0]!, base + 2)).map((r) => r.id)).toEqual(ids.slice(1, 5));
      expect(await t.store.readLedgerAfter(ids[6]!, base + 100)).toEqual([]);
      expect(await t.store.readLedgerAfter(ids[2]!, base)).toEqual([]);
      // A made-up id between records resumes at the next one.
      expect((await t.store.readLedgerAfter(`${base}-99`, base + 3, 1)).map((r) => r.id)).toEqual([ids[3]]);
      await expect(t.store.readLedgerAfter('nope', base + 3)).rejects.toBeInstanceOf(RangeError);
    });
  });
}
