// Checking a sliding-window rate limit from a log of start times: the most starts inside any
// half-open interval [t, t + window), and the median of a sample. Used by the limiter tests and
// by bench/limits-soak.ts on the emulator's request log.

/** The most times inside any half-open interval [t, t + windowMs); the input needs no order. */
export function maxInAnyInterval(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let worst = 0;
  let lo = 0;
  for (let hi = 0; hi < sorted.length; hi++) {
    while (sorted[hi]! - sorted[lo]! >= windowMs) lo++;
    worst = Math.max(worst, hi - lo + 1);
  }
  return worst;
}

/** The upper median (NaN for none). */
export const median = (xs: readonly number[]): number =>
  [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
