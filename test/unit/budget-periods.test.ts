// Budget periods are local calendar days and months in the configured zone; the local date is
// remembered per second, so instants on either side of a local midnight within one call pattern
// still get their own dates.
import { describe, expect, it } from 'vitest';
import { localDate, localDates, periodId } from '../../src/cost/budget-periods.ts';

describe('localDate', () => {
  it('changes exactly at the local midnight, however often it is asked', () => {
    const midnight = Date.parse('2026-01-14T21:00:00.000Z'); // 00:00 in Moscow (UTC+3)
    for (let i = 0; i < 3; i++) {
      expect(localDate(midnight - 1000, 'Europe/Moscow')).toBe('2026-01-14');
      expect(localDate(midnight - 1, 'Europe/Moscow')).toBe('2026-01-14');
      expect(localDate(midnight, 'Europe/Moscow')).toBe('2026-01-15');
      expect(localDate(midnight + 999, 'Europe/Moscow')).toBe('2026-01-15');
      // Another zone asked in between keeps its own answer.
      expect(localDate(midnight, 'UTC')).toBe('2026-01-14');
    }
    expect(periodId('month', Date.parse('2026-01-31T21:00:00.000Z'), 'Europe/Moscow')).toBe('2026-02');
  });

  it('a zone with an offset of seconds (Monrovia before 1972) still turns at its midnight', () => {
    // UTC-0:44:30: local midnight of 1960-06-02 is 00:44:30 UTC.
    const midnight = Date.parse('1960-06-02T00:44:30.000Z');
    expect(localDate(midnight - 1, 'Africa/Monrovia')).toBe('1960-06-01');
    expect(localDate(midnight, 'Africa/Monrovia')).toBe('1960-06-02');
  });
});

describe('localDates (many instants of one zone)', () => {
  // Zones with DST at midnight (Santiago, Havana), half-hour DST (Lord Howe), a skipped day (Apia,
  // 2011-12-30), a 5:45 offset (Kathmandu), an ordinary DST zone and Moscow.
  const zones = [
    'Europe/Moscow',
    'America/New_York',
    'America/Santiago',
    'America/Havana',
    'Australia/Lord_Howe',
    'Pacific/Apia',
    'Asia/Kathmandu',
  ];
  const spans = [
    ['2011-12-27T00:00:00Z', '2012-01-03T00:00:00Z'], // Apia skips 30 December 2011
    ['2026-03-25T00:00:00Z', '2026-04-10T00:00:00Z'], // spring/autumn changes in both hemispheres
    ['2026-09-01T00:00:00Z', '2026-09-12T00:00:00Z'], // Santiago's change at midnight
    ['2026-10-25T00:00:00Z', '2026-11-05T00:00:00Z'],
  ];

  it('gives each instant the date localDate gives it, in order and out of order', () => {
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (const zone of zones) {
      for (const [a, b] of spans) {
        const from = Date.parse(a!);
        const to = Date.parse(b!);
        const dates = localDates(zone);
        // Ordered, dense around every local midnight of the span, then random instants.
        const instants: number[] = [];
        for (let t = from; t < to; t += 23 * 60_000 + 13_001) instants.push(t);
        for (let i = 0; i < 400; i++) instants.push(from + Math.floor(rand() * (to - from)));
        for (const t of instants)
          expect(dates(t), `${zone} ${new Date(t).toISOString()}`).toBe(localDate(t, zone));
      }
    }
  });

  it('turns at the local midnight to the millisecond', () => {
    const dates = localDates('Europe/Moscow');
    const midnight = Date.parse('2026-01-14T21:00:00.000Z');
    expect(dates(midnight - 3_600_000)).toBe('2026-01-14');
    expect(dates(midnight - 1)).toBe('2026-01-14');
    expect(dates(midnight)).toBe('2026-01-15');
    expect(dates(midnight - 1)).toBe('2026-01-14');
  });
});
