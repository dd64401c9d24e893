// Test clocks kept clear of Moscow's midnight: budget days and statement months roll over in
// Europe/Moscow (cost.timeZone), and a test that moves its clocks by minutes must not straddle it
// whenever it happens to run.

/** Milliseconds from `now` to the next 12:00 in Europe/Moscow (UTC+3, no daylight saving). */
export function msToNextMoscowNoon(now: number): number {
  const day = 86_400_000;
  const noonUtc = 9 * 3_600_000;
  const sinceMidnightUtc = ((now % day) + day) % day;
  return (noonUtc - sinceMidnightUtc + day) % day || day;
}
