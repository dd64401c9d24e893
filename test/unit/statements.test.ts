// The pure parts of statements and the export's times: month bounds and state in a zone (DST
// included), ISO times with the zone's offset, the statement's sums, peak day and unpaid share,
// and the savings record's in-process sums and flush (a failed flush keeps its sums).
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { ZonedTime } from '../../src/cost/spend-ledger.ts';
import { SavingsRecord, savingsKey, servedKey, unpaidKey } from '../../src/finance/savings-record.ts';
import {
  buildStatement,
  ChargeTally,
  monthBounds,
  monthState,
  parseMonth,
} from '../../src/finance/statements.ts';

describe('month bounds', () => {
  it('parses YYYY-MM and refuses anything else', () => {
    expect(parseMonth('2026-11')).toEqual({ year: 2026, month: 11 });
    for (const bad of ['2026-13', '2026-00', 'abc', '2026-1', '26-11', '1999-12', '2026-11-01'])
      expect(parseMonth(bad)).toBeNull();
  });

  it('runs from local midnight to local midnight, closing a day after the end', () => {
    const b = monthBounds('2026-11', 'Europe/Moscow')!;
    expect(new Date(b.fromMs).toISOString()).toBe('2026-10-31T21:00:00.000Z');
    expect(new Date(b.toMs).toISOString()).toBe('2026-11-30T21:00:00.000Z');
    expect(new Date(b.closesAtMs).toISOString()).toBe('2026-12-01T21:00:00.000Z');
    expect(b.days).toHaveLength(30);
    expect(b.days[0]).toBe('2026-11-01');
    const dec = monthBounds('2026-12', 'Europe/Moscow')!;
    expect(new Date(dec.toMs).toISOString()).toBe('2026-12-31T21:00:00.000Z');
    expect(monthBounds('2028-02', 'UTC')!.days).toHaveLength(29);
  });

  it('follows a DST change inside the month (New York, March 2026: -05:00 then -04:00)', () => {
    const b = monthBounds('2026-03', 'America/New_York')!;
    expect(new Date(b.fromMs).toISOString()).toBe('2026-03-01T05:00:00.000Z');
    expect(new Date(b.toMs).toISOString()).toBe('2026-04-01T04:00:00.000Z');
  });

  it('is future before it begins, open until the grace day ends, then closed', () => {
    const b = monthBounds('2026-11', 'Europe/Moscow')!;
    expect(monthState(b, b.fromMs - 1)).toBe('future');
    expect(monthState(b, b.fromMs)).toBe('open');
    expect(monthState(b, b.toMs + 86_400_000 - 1)).toBe('open');
    expect(monthState(b, b.closesAtMs)).toBe('closed');
  });
});

describe('zoned times', () => {
  it('shows the offset of the zone at each instant and keeps the instant', () => {
    const ny = new ZonedTime('America/New_York');
    const winter = Date.UTC(2026, 2, 8, 6, 59, 59, 999);
    const summer = Date.UTC(2026, 2, 8, 7, 0, 0, 0);
    expect(ny.format(winter)).toBe('2026-03-08T01:59:59.999-05:00');
    expect(ny.format(summer)).toBe('2026-03-08T03:00:00.000-04:00');
    expect(Date.parse(ny.format(winter))).toBe(winter);
    expect(new ZonedTime('Europe/Moscow').format(Date.UTC(2026, 10, 28, 9, 0))).toBe(
      '2026-11-28T12:00:00.000+03:00',
    );
    expect(new ZonedTime('Asia/Kolkata').format(Date.UTC(2026, 0, 1))).toBe('2026-01-01T05:30:00.000+05:30');
    expect(() => new ZonedTime('Mars/Olympus')).toThrow(RangeError);
  });
});

describe('buildStatement', () => {
  it('sums charges by kind and day, savings by reason, served and unpaid, and picks the peak day', () => {
    const bounds = monthBounds('2026-11', 'Europe/Moscow')!;
    const tally = new ChargeTally();
    tally.add({ app: 'crm', kind: 'dossier', amountMinor: 9900 }, '2026-11-02');
    tally.add({ app: 'crm', kind: 'requisites', amountMinor: 1500 }, '2026-11-03');
    tally.add({ app: 'crm', kind: 'dossier', amountMinor: 9900 }, '2026-11-03');
    tally.add({ app: 'erp', kind: 'dossier', amountMinor: 9900 }, '2026-11-02');
    const counters = new Map([
      [savingsKey('crm', 'dossier', 'cache', '2026-11-03'), 19_800],
      [savingsKey('erp', 'dossier', 'coalesced', '2026-11-02'), 9900],
      [servedKey('crm', '2026-11-02'), 1],
      [servedKey('crm', '2026-11-03'), 4],
      [unpaidKey('crm', '2026-11-03'), 2],
    ]);
    const s = buildStatement({
      bounds,
      timeZone: 'Europe/Moscow',
      state: 'open',
      computedAtMs: bounds.fromMs + 5 * 86_400_000,
      apps: ['crm', 'erp'],
      kinds: ['dossier', 'requisites'],
      reasons: ['cache', 'coalesced'],
      charges: tally,
      counters,
      savingsKey,
      servedKey,
      unpaidKey,
      caps: new Map([
        ['_global', [{ period: 'month', limit_minor: 1, soft_minor: null, source: 'config', version: 0 }]],
      ]),
      changes: [
        {
          at: bounds.fromMs + 1,
          actor: 'anna',
          action: 'budget_set',
          target: 'budget:crm:day',
          before: null,
          after: { limit_minor: 5 },
          reason: 'x',
        },
        {
          at: bounds.fromMs + 2,
          actor: 'anna',
          action: 'budget_set',
          target: 'budget:_global:month',
          before: null,
          after: { limit_minor: 1 },
          reason: 'y',
        },
      ],
      globalScope: '_global',
    });
    const crm = s.apps[0]!;
    expect(crm.charges).toEqual({
      count: 3,
      amount_minor: 21_300,
      by_kind: [
        { kind: 'dossier', count: 2, amount_minor: 19_800 },
        { kind: 'requisites', count: 1, amount_minor: 1500 },
      ],
    });
    expect(crm.peak_day).toEqual({ day: '2026-11-03', amount_minor: 11_400, count: 2 });
    expect(crm.savings).toEqual({
      total_minor: 19_800,
      by_reason: { cache: 19_800 },
      by_kind: { dossier: 19_800 },
    });
    expect(crm.requests).toEqual({ served: 5, unpaid: 2, paid: 3, unpaid_share: 0.4 });
    expect(crm.cap_changes.map((c) => c.period)).toEqual(['day']);
    expect(s.apps[1]!.requests.unpaid_share).toBeNull();
    expect(s.total.charges.amount_minor).toBe(31_200);
    expect(s.total.savings.by_reason).toEqual({ cache: 19_800, coalesced: 9900 });
    // The total's peak: 2026-11-02 has 19,800 (crm 9900 + erp 9900), 2026-11-03 has 11,400.
    expect(s.total.peak_day).toEqual({ day: '2026-11-02', amount_minor: 19_800, count: 2 });
    expect(s.total.caps).toHaveLength(1);
    expect(s.total.cap_changes.map((c) => c.period)).toEqual(['month']);
    expect(s.from).toBe('2026-11-01T00:00:00.000+03:00');
  });
});

describe('SavingsRecord', () => {
  it('sums in process and adds the sums to the store on flush; a failed flush keeps them', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 28, 9, 0));
    const writes: Array<[string, number]> = [];
    let failing = true;
    const record = new SavingsRecord({
      store: {
        addSpend: async (keys, n) => {
          if (failing) throw new Error('store down');
          writes.push([keys[0]!, n]);
        },
        setIfAbsent: async (key) => {
          if (failing) throw new Error('store down');
          writes.push([key, 1]);
          return true;
        },
      },
      clock,
      timeZone: () => 'Europe/Moscow',
      logger: { warn: () => {} },
    });
    record.saved('crm', 'dossier', 'cache', 9900);
    record.saved('crm', 'dossier', 'cache', 9900);
    record.saved('crm', 'dossier', 'cache', 0);
    record.served('crm', false);
    record.served('crm', true);
    await record.flush();
    expect(writes).toEqual([]);
    expect(record.pendingKeys).toBe(4);
    failing = false;
    record.saved('crm', 'dossier', 'cache', 100);
    await record.close();
    expect(new Map(writes)).toEqual(
      new Map([
        [savingsKey('crm', 'dossier', 'cache', '2026-11-28'), 19_900],
        [servedKey('crm', '2026-11-28'), 2],
        [unpaidKey('crm', '2026-11-28'), 1],
        ['statement-app:2026-11:crm', 1],
      ]),
    );
    expect(record.pendingKeys).toBe(0);
  });

  it('counts served requests under the day they were served on, across a day and a month boundary', async () => {
    // 20:59 UTC on 30 November is 23:59 in Moscow; two minutes later it is 1 December there.
    const clock = new ManualClock(Date.UTC(2026, 10, 30, 20, 59));
    const writes: Array<[string, number]> = [];
    const record = new SavingsRecord({
      store: {
        addSpend: async (keys, n) => {
          writes.push([keys[0]!, n]);
        },
        setIfAbsent: async (key) => {
          writes.push([key, 1]);
          return true;
        },
      },
      clock,
      timeZone: () => 'Europe/Moscow',
      logger: { warn: () => {} },
    });
    record.served('crm', false);
    record.served('crm', false);
    clock.advance(120_000);
    record.served('crm', true);
    record.served('erp', false);
    await record.close();
    expect(new Map(writes)).toEqual(
      new Map([
        [servedKey('crm', '2026-11-30'), 2],
        [unpaidKey('crm', '2026-11-30'), 2],
        ['statement-app:2026-11:crm', 1],
        [servedKey('crm', '2026-12-01'), 1],
        ['statement-app:2026-12:crm', 1],
        [servedKey('erp', '2026-12-01'), 1],
        [unpaidKey('erp', '2026-12-01'), 1],
        ['statement-app:2026-12:erp', 1],
      ]),
    );
  });
});
