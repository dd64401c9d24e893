// Date-time rendering for the emulator's answers: ISO 8601 with the Moscow offset (+03:00),
// as the upstream's "timestamp with offset" fields. Pure functions; never reads a clock.

const MSK_OFFSET_MS = 3 * 60 * 60 * 1000;
const MSK_SUFFIX = '+03:00';

/** Renders epoch milliseconds as `2026-01-15T12:00:00.000+03:00`. */
export function isoMsk(ms: number): string {
  return new Date(ms + MSK_OFFSET_MS).toISOString().replace('Z', MSK_SUFFIX);
}

/** Start of the Moscow calendar day containing `ms`, in epoch milliseconds. */
export function mskDayStart(ms: number): number {
  const day = 24 * 60 * 60 * 1000;
  return Math.floor((ms + MSK_OFFSET_MS) / day) * day - MSK_OFFSET_MS;
}

/** Whole seconds from `now` until `until`, rounded up, at least 1 (a Retry-After value). */
export function secondsUntil(now: number, until: number): number {
  return Math.max(1, Math.ceil((until - now) / 1000));
}
