// Calendar budget periods in a configured time zone: a day is the local calendar day and a
// month the local calendar month (not "24 h since first use"). Pure functions of a clock
// reading; the Store only ever sees the resulting counter names.

export type Period = 'day' | 'month';
export const PERIODS: readonly Period[] = ['day', 'month'];

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' });
    formatters.set(timeZone, f);
  }
  return f;
}

/** Throws a RangeError for an unknown IANA zone (config validation uses it). */
export function assertTimeZone(timeZone: string): void {
  formatter(timeZone);
}

/**
 * Per zone, the last second asked for and its local date (formatToParts costs ~30 us; every
 * zone's offset, historic ones included, is a whole number of seconds).
 */
const lastSecond = new Map<string, { second: number; date: string }>();

/** The local calendar date, "YYYY-MM-DD", of an instant in the zone. */
export function localDate(ms: number, timeZone: string): string {
  const second = Math.floor(ms / 1000);
  const known = lastSecond.get(timeZone);
  if (known?.second === second) return known.date;
  const parts = formatter(timeZone).formatToParts(new Date(ms));
  const get = (type: string) => parts.find((p) => p.type === type)!.value;
  const date = `${get('year')}-${get('month')}-${get('day')}`;
  if (lastSecond.size > 64) lastSecond.clear();
  lastSecond.set(timeZone, { second, date });
  return date;
}

/** More than any local day lasts (26 h at most, with a DST change): a point surely outside it. */
const BEYOND_A_DAY_MS = 2 * 86_400_000;

/**
 * localDate for many instants of one zone (a reconciliation's charges, a day's worth each): the
 * bounds of the local day found are kept, so an instant inside them costs a comparison instead
 * of an Intl lookup (~30 µs for each new second of time: 70,000 charges spent ~1 s on it). The
 * bounds are found by bisection to the millisecond (~60 lookups a day), which holds because a
 * zone's local date never goes back as time goes on.
 */
export function localDates(timeZone: string): (ms: number) => string {
  let from = 0;
  let until = 0;
  let date = '';
  const edge = (inside: number, outside: number, day: string): number => {
    // The instant where `day` ends on the `outside` side, to the millisecond.
    while (Math.abs(outside - inside) > 1) {
      const mid = inside + Math.trunc((outside - inside) / 2);
      if (localDate(mid, timeZone) === day) inside = mid;
      else outside = mid;
    }
    return outside > inside ? outside : inside;
  };
  return (ms) => {
    if (ms >= from && ms < until) return date;
    date = localDate(ms, timeZone);
    from = edge(ms, ms - BEYOND_A_DAY_MS, date);
    until = edge(ms, ms + BEYOND_A_DAY_MS, date);
    return date;
  };
}

/** The id of the period containing `ms`: "2026-01-15" for a day, "2026-01" for a month. */
export function periodId(period: Period, ms: number, timeZone: string): string {
  const date = localDate(ms, timeZone);
  return period === 'day' ? date : date.slice(0, 7);
}

/** Counter lifetime: long enough to outlive its period and still be read in reports. */
export function periodTtlMs(period: Period): number {
  return period === 'day' ? 3 * 86_400_000 : 40 * 86_400_000;
}

export function budgetCounterKey(owner: { app: string } | 'global', period: Period, id: string): string {
  return owner === 'global' ? `budget:global:${period}:${id}` : `budget:app:${owner.app}:${period}:${id}`;
}
