// Spend forecasts (src/finance/forecast.ts) on synthetic months: a flat spend forecasts exactly
// at every hour of the month, a spike moves the forecast by what the method says, the first
// day of a month with no history extrapolates today's pace (floored at 1 hour), and history
// from the previous month carries over. Then through BudgetGuard.status() on a memory store with
// an injected clock: forecastMinor is read from the day counters and the history read is cached.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { BudgetGuard } from '../../src/cost/budget-guard.ts';
import { budgetCounterKey, localDate } from '../../src/cost/budget-periods.ts';
import { forecastPlan, forecastSpend, RECENT_DAYS, recentDailyRate } from '../../src/finance/forecast.ts';
import { MemoryStore } from '../../src/store/index.ts';

const TZ = 'Europe/Moscow'; // UTC+3, no DST
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Midnight in Moscow of a date, as epoch ms. */
const msk = (y: number, m: number, d: number, h = 0, min = 0) => Date.UTC(y, m - 1, d, h - 3, min);

/**
 * A synthetic history: `perDay(date)` minor units spent evenly through each local day. What the
 * counters would hold at `now`: today's so far, the month's so far, and each recent full day.
 */
function countersAt(now: number, perDay: (date: string) => number) {
  const plan = forecastPlan(now, TZ);
  const today = plan.today;
  const spentDay = Math.round(perDay(today) * plan.dayFraction);
  let spentMonth = spentDay;
  for (let t = now - DAY; localDate(t, TZ).slice(0, 7) === today.slice(0, 7); t -= DAY)
    spentMonth += perDay(localDate(t, TZ));
  return {
    plan,
    input: {
      spentDayMinor: spentDay,
      spentMonthMinor: spentMonth,
      recentSpentMinor: plan.recentDays.map(perDay),
    },
  };
}

describe('forecastPlan', () => {
  it('places a reading in its local day and month', () => {
    const plan = forecastPlan(msk(2026, 3, 10, 12), TZ);
    expect(plan.today).toBe('2026-03-10');
    expect(plan.dayFraction).toBeCloseTo(0.5, 6);
    expect(plan.daysAfterToday).toBe(21);
    expect(plan.recentDays).toHaveLength(RECENT_DAYS);
    expect(plan.recentDays[0]).toBe('2026-03-03');
    expect(plan.recentDays.at(-1)).toBe('2026-03-09');
    // Across a month and a year boundary; the last day of February has no day after it.
    expect(forecastPlan(msk(2026, 1, 2, 6), TZ).recentDays.slice(-2)).toEqual(['2025-12-31', '2026-01-01']);
    expect(forecastPlan(msk(2026, 2, 28, 23, 59), TZ).daysAfterToday).toBe(0);
  });

  it('a new day starts at local midnight to the millisecond', () => {
    const midnight = msk(2026, 3, 11);
    expect(forecastPlan(midnight - 1, TZ)).toMatchObject({ today: '2026-03-10' });
    expect(forecastPlan(midnight - 1, TZ).dayFraction).toBeCloseTo(1, 6);
    expect(forecastPlan(midnight, TZ)).toMatchObject({ today: '2026-03-11', dayFraction: 0 });
  });

  it('measures the elapsed fraction of a 23-hour DST day in its own hours', () => {
    // Europe/Berlin springs forward on 2026-03-29 (02:00 -> 03:00): 12:00 local is 11 h in.
    const noon = Date.UTC(2026, 2, 29, 10); // 12:00 CEST
    const plan = forecastPlan(noon, 'Europe/Berlin');
    expect(plan.today).toBe('2026-03-29');
    expect(plan.dayFraction).toBeCloseTo(11 / 23, 4);
  });
});

describe('forecastSpend on synthetic months', () => {
  it('a flat spend forecasts the day and the month exactly, at every hour of the month', () => {
    const flat = () => 1000;
    for (let t = msk(2026, 3, 1, 0, 30); t < msk(2026, 4, 1); t += 5 * HOUR) {
      const { plan, input } = countersAt(t, flat);
      const f = forecastSpend(plan, input);
      const label = new Date(t).toISOString();
      expect(Math.abs(f.dayMinor - 1000), label).toBeLessThanOrEqual(1);
      expect(Math.abs(f.monthMinor - 31_000), label).toBeLessThanOrEqual(1);
      expect(f.recentDailyMinor).toBe(1000);
    }
  });

  it('a spike yesterday weighs 1/7 in the recent rate over the days left', () => {
    const spiky = (d: string) => (d === '2026-03-09' ? 9000 : 1000);
    const { plan, input } = countersAt(msk(2026, 3, 10, 12), spiky);
    expect(input).toMatchObject({ spentDayMinor: 500, spentMonthMinor: 17_500 });
    const f = forecastSpend(plan, input);
    const recent = (6 * 1000 + 9000) / 7;
    expect(f.recentDailyMinor).toBe(Math.round(recent));
    // Day: half today's own pace (1000/day), half the history.
    const day = 500 + 0.5 * (0.5 * 1000 + 0.5 * recent);
    expect(f.dayMinor).toBe(Math.round(day));
    expect(f.monthMinor).toBe(Math.round(17_500 + (Math.round(day) - 500) + recent * 21));
    // Above what a flat month would forecast plus the spike itself: the recent rate is higher.
    expect(f.monthMinor).toBeGreaterThan(31_000 + 8000);
  });

  it("a spike today: the day-end forecast moves from the history toward today's pace as the day goes", () => {
    // 10,000 a day today (10x the usual), evenly.
    const perDay = (d: string) => (d === '2026-03-10' ? 10_000 : 1000);
    const at = (h: number) => {
      const { plan, input } = countersAt(msk(2026, 3, 10, h), perDay);
      return forecastSpend(plan, input).dayMinor;
    };
    const morning = at(3);
    const noon = at(12);
    const evening = at(21);
    expect(morning).toBeLessThan(noon);
    expect(noon).toBeLessThan(evening);
    expect(noon).toBe(Math.round(5000 + 0.5 * (0.5 * 10_000 + 0.5 * 1000)));
    expect(evening).toBeGreaterThan(9000);
    expect(evening).toBeLessThanOrEqual(10_000);
  });

  it('month start with no history: the pace of the first day, floored at 1 hour', () => {
    const none = (d: string) => (d >= '2026-03-01' ? 1000 : 0);
    const { plan, input } = countersAt(msk(2026, 3, 1, 6), none);
    expect(input).toMatchObject({ spentDayMinor: 250, spentMonthMinor: 250 });
    const f = forecastSpend(plan, input);
    expect(f.recentDailyMinor).toBeNull();
    expect(f.dayMinor).toBe(1000);
    expect(f.monthMinor).toBe(31_000);
    // One call of 100 at 00:06: extrapolated as if an hour had passed, not 6 minutes.
    const early = forecastSpend(forecastPlan(msk(2026, 3, 1, 0, 6), TZ), {
      spentDayMinor: 100,
      spentMonthMinor: 100,
      recentSpentMinor: new Array(RECENT_DAYS).fill(0),
    });
    expect(early.dayMinor).toBeLessThanOrEqual(100 + 2400);
    expect(early.dayMinor).toBeGreaterThan(2000);
    // Nothing spent at all: nothing forecast.
    expect(forecastSpend(plan, { spentDayMinor: 0, spentMonthMinor: 0, recentSpentMinor: [0, 0] })).toEqual({
      dayMinor: 0,
      monthMinor: 0,
      recentDailyMinor: null,
    });
  });

  it("month start with last month's history: the recent days carry over", () => {
    const { plan, input } = countersAt(msk(2026, 3, 1, 6), () => 1000);
    expect(input.spentMonthMinor).toBe(250);
    expect(forecastSpend(plan, input).monthMinor).toBe(31_000);
  });

  it('history begins at the first day with spend: a gateway deployed 2 days ago averages over 2', () => {
    expect(recentDailyRate([0, 0, 0, 0, 0, 600, 1000])).toBe(800);
    // A quiet day after history began counts as 0.
    expect(recentDailyRate([0, 0, 0, 0, 600, 0, 1200])).toBe(600);
    expect(recentDailyRate([0, 0, 0])).toBeNull();
  });

  it('never forecasts below what is spent', () => {
    const plan = forecastPlan(msk(2026, 3, 31, 23, 59), TZ);
    const f = forecastSpend(plan, { spentDayMinor: 5000, spentMonthMinor: 9000, recentSpentMinor: [1] });
    expect(f.dayMinor).toBeGreaterThanOrEqual(5000);
    expect(f.monthMinor).toBeGreaterThanOrEqual(9000);
  });
});

describe('BudgetGuard.status forecasts', () => {
  it('reads the last 7 day counters once an hour and gives forecastMinor per budget', async () => {
    const clock = new ManualClock(msk(2026, 3, 10, 12));
    const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
    const guard = new BudgetGuard({
      store,
      clock,
      timeZone: TZ,
      global: { month: { limitMinor: 50_000 } },
      apps: new Map([['crm', { day: { limitMinor: 2000 } }]]),
    });
    const ttl = guard.counterTtlMs;
    // Flat 1000/day for the app since March 1 (the global counters see the same spend).
    for (let d = 1; d <= 9; d++) {
      const id = `2026-03-${String(d).padStart(2, '0')}`;
      await store.addSpend(
        [budgetCounterKey({ app: 'crm' }, 'day', id), budgetCounterKey('global', 'day', id)],
        1000,
        ttl,
      );
    }
    const monthKeys = [
      budgetCounterKey({ app: 'crm' }, 'month', '2026-03'),
      budgetCounterKey('global', 'month', '2026-03'),
    ];
    await store.addSpend(monthKeys, 9500, ttl);
    const todayKeys = [
      budgetCounterKey({ app: 'crm' }, 'day', '2026-03-10'),
      budgetCounterKey('global', 'day', '2026-03-10'),
    ];
    await store.addSpend(todayKeys, 500, ttl);

    const byKey = async () =>
      Object.fromEntries((await guard.status('crm')).map((s) => [`${s.scope}:${s.period}`, s.forecastMinor]));
    expect(await byKey()).toEqual({
      'app:day': 1000,
      'global:day': 1000,
      'app:month': 31_000,
      'global:month': 31_000,
    });

    // A late settlement on yesterday's counter is not read again within the hour...
    await store.addSpend([budgetCounterKey({ app: 'crm' }, 'day', '2026-03-09')], 7000, ttl);
    clock.advance(30 * 60_000);
    const cached = await byKey();
    const withOldHistory = forecastSpend(forecastPlan(clock.now(), TZ), {
      spentDayMinor: 500,
      spentMonthMinor: 9500,
      recentSpentMinor: new Array(RECENT_DAYS).fill(1000),
    });
    expect(cached['app:month']).toBe(withOldHistory.monthMinor);
    expect(cached['app:day']).toBe(withOldHistory.dayMinor);
    // ...and is after it: the recent rate is now (6*1000 + 8000)/7 = 2000 a day.
    clock.advance(31 * 60_000);
    const reread = await guard.status('crm');
    const month = reread.find((s) => s.scope === 'app' && s.period === 'month')!;
    expect(month.forecastMinor).toBeGreaterThan(31_000 + 20 * 1000);
    expect(month.spentMinor).toBe(9500);
  });
});
