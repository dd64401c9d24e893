// Budget periods are local calendar days and months in the configured zone; the local date is
// remembered per second, so instants on either side of a local midnight within one call pattern
// still get their own dates.
import { describe, expect, it } from 'vitest';
import { localDate, periodId } from '../../src/cost/budget-periods.ts';

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
