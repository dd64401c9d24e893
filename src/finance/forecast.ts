// Day-end and month-end spend forecasts for a budget (an app's or the global one), from what the
// budget counters say was spent: pure functions of a clock reading and counter values, so the
// method is tested on synthetic months with an injected clock (test/unit/forecast.test.ts).
//
// The method (README "Forecasts" states the same):
//   recent rate  = the average spend per day over the last RECENT_DAYS (7) full local days, read
//                  from their day counters (budget:<scope>:day:<YYYY-MM-DD>). History begins at
//                  the first of those days with any spend (a gateway deployed 2 days ago averages
//                  over 2 days, not 7); a quiet day after that counts as 0. No spend on any of
//                  them: no history (null).
//   today's pace = spent today / the elapsed fraction of the local day (the fraction floored at
//                  1 hour, so one call at 00:01 does not extrapolate to a fortune).
//   day rate     = f * pace + (1 - f) * recent (= spent today + (1 - f) * recent), f = the
//                  elapsed fraction of the day: early in the day the history speaks, late in the
//                  day today's own pace does; a flat spend forecasts exactly. No history: the
//                  pace alone (the only place the 1-hour floor applies).
//   day-end      = spent today + (1 - f) * day rate.
//   month-end    = spent this month + (day-end - spent today) + recent * full days left after
//                  today (no history: the pace). A spike today moves the month-end forecast by
//                  what it adds today; from tomorrow it weighs 1/7 in the recent rate.
// Forecasts are whole minor units and never below what is already spent.
//
// Must never: read the store or the wall clock (callers pass counter values and `now`), or
// return less than is spent.
import { localDay } from '../cost/budget-periods.ts';

/** Full days the recent daily rate averages over. */
export const RECENT_DAYS = 7;
/** The elapsed fraction of the day today's pace divides by is never below this (1 hour). */
const MIN_PACE_FRACTION = 1 / 24;

/** Where a reading `now` sits in its local day and month, and which full days came before. */
export interface ForecastPlan {
  /** Today's local date, "YYYY-MM-DD". */
  today: string;
  /** The last RECENT_DAYS full local days, oldest first. */
  recentDays: readonly string[];
  /** Elapsed fraction of today, 0..1. */
  dayFraction: number;
  /** Whole local days in this month after today. */
  daysAfterToday: number;
}

export interface ForecastInput {
  spentDayMinor: number;
  spentMonthMinor: number;
  /** Spend of each of plan.recentDays, in the same order (absent counters: 0). */
  recentSpentMinor: readonly number[];
}

export interface Forecast {
  dayMinor: number;
  monthMinor: number;
  /** The recent daily rate used (minor units a day), or null when there was no history. */
  recentDailyMinor: number | null;
}

/** The plan for a reading in the zone (local day bounds found to the second). */
export function forecastPlan(now: number, timeZone: string): ForecastPlan {
  const { today, start, end, recentDays, daysAfterToday } = dayOf(now, timeZone);
  const dayFraction = Math.min(1, Math.max(0, (now - start) / Math.max(1, end - start)));
  return { today, recentDays, dayFraction, daysAfterToday };
}

interface LocalDay {
  today: string;
  start: number;
  end: number;
  recentDays: readonly string[];
  daysAfterToday: number;
}

/**
 * Per zone, the local day last asked for (a bounds search costs ~150 us of formatToParts; /v1/me
 * and every scrape ask): reused while `now` falls inside it.
 */
const lastDay = new Map<string, LocalDay>();

/** The local day containing `now`: its [start, end) in epoch ms (to the second) and calendar facts. */
function dayOf(now: number, timeZone: string): LocalDay {
  const known = lastDay.get(timeZone);
  if (known && now >= known.start && now < known.end) return known;
  const { date: today, start, end } = localDay(now, timeZone);
  const [y, m, d] = today.split('-').map(Number) as [number, number, number];
  const daysInMonth = new Date(Date.UTC(y, m, 0)).getUTCDate();
  const recentDays: string[] = [];
  for (let k = RECENT_DAYS; k >= 1; k--)
    recentDays.push(new Date(Date.UTC(y, m - 1, d - k)).toISOString().slice(0, 10));
  const day = { today, start, end, recentDays, daysAfterToday: daysInMonth - d };
  if (lastDay.size > 64) lastDay.clear();
  lastDay.set(timeZone, day);
  return day;
}

/** The average spend per day since the first day with spend in the window, or null (none). */
export function recentDailyRate(days: readonly number[]): number | null {
  const first = days.findIndex((v) => v > 0);
  if (first < 0) return null;
  const kept = days.slice(first);
  return kept.reduce((a, b) => a + b, 0) / kept.length;
}

/** Day-end and month-end forecasts (see the header for the method). */
export function forecastSpend(plan: ForecastPlan, input: ForecastInput): Forecast {
  const f = plan.dayFraction;
  const spentDay = Math.max(0, input.spentDayMinor);
  const spentMonth = Math.max(spentDay, input.spentMonthMinor);
  const recent = recentDailyRate(input.recentSpentMinor);
  const pace = spentDay / Math.max(f, MIN_PACE_FRACTION);
  // f * pace is spentDay itself (the floor only matters without history).
  const dayRate = recent === null ? pace : spentDay + (1 - f) * recent;
  const dayMinor = Math.max(spentDay, Math.round(spentDay + (1 - f) * dayRate));
  const laterRate = recent ?? pace;
  const monthMinor = Math.max(
    spentMonth,
    Math.round(spentMonth + (dayMinor - spentDay) + laterRate * plan.daysAfterToday),
  );
  return { dayMinor, monthMinor, recentDailyMinor: recent === null ? null : Math.round(recent) };
}
