// Deterministic randomness for the emulator's synthetic data: a 32-bit string hash and the
// sfc32 generator seeded from it. Everything the data source produces flows from
// (seed, input) through here; nothing may use Math.random() or the wall clock.

/** FNV-1a 32-bit hash of a string (UTF-16 code units). */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** A small fast PRNG (sfc32) with the helpers the generators need. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(key: string) {
    const h = hash32(key);
    this.a = h;
    this.b = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
    this.c = Math.imul(this.b ^ (this.b >>> 13), 0xc2b2ae35) >>> 0;
    this.d = 1;
    for (let i = 0; i < 10; i++) this.next();
  }

  /** Uniform in [0, 1). */
  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return (t >>> 0) / 4294967296;
  }

  /** Integer in [min, max] inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** A string of `n` random decimal digits. */
  digits(n: number): string {
    let out = '';
    for (let i = 0; i < n; i++) out += Math.floor(this.next() * 10);
    return out;
  }

  /** Picks `n` distinct items (or all when fewer); no copy of a large pool. */
  sample<T>(items: readonly T[], n: number): T[] {
    const want = Math.min(n, items.length);
    const chosen = new Set<number>();
    while (chosen.size < want) chosen.add(Math.floor(this.next() * items.length));
    return [...chosen].map((i) => items[i]!);
  }

  /** A big integer with up to `maxDigits` digits, log-uniform-ish (for money in kopecks or thousands). */
  bigAmount(minDigits: number, maxDigits: number): bigint {
    const len = this.int(minDigits, maxDigits);
    const first = this.int(1, 9);
    return BigInt(`${first}${this.digits(len - 1)}`);
  }
}

/** Reference date of the synthetic world: all dates are at or before it. */
export const REFERENCE_DATE = '2026-01-01';

/** Days since 1970-01-01 of an ISO date (civil calendar, no Date objects: hot path). */
export function isoToDays(iso: string): number {
  let y = Number(iso.slice(0, 4));
  const m = Number(iso.slice(5, 7));
  const d = Number(iso.slice(8, 10));
  y -= m <= 2 ? 1 : 0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** ISO date of a day number since 1970-01-01. */
export function daysToIso(days: number): string {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  const y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  return `${y}-${m < 10 ? '0' : ''}${m}-${d < 10 ? '0' : ''}${d}`;
}

const REFERENCE_DAYS = isoToDays(REFERENCE_DATE);

/** ISO date `daysBefore` days before the reference date. */
export function dateBefore(daysBefore: number): string {
  return daysToIso(REFERENCE_DAYS - daysBefore);
}

/** ISO date between two ISO dates (inclusive), picked by rng. */
export function dateBetween(rng: Rng, from: string, to: string): string {
  const a = isoToDays(from);
  const span = Math.max(0, isoToDays(to) - a);
  return daysToIso(a + rng.int(0, span));
}

/** ISO date `days` after an ISO date. */
export function addDays(iso: string, days: number): string {
  return daysToIso(isoToDays(iso) + days);
}

/** ISO date-time (UTC) at the given date plus a random working time of day. */
export function dateTimeOn(rng: Rng, date: string): string {
  const h = rng.int(6, 19);
  const mi = rng.int(0, 59);
  return `${date}T${h < 10 ? '0' : ''}${h}:${mi < 10 ? '0' : ''}${mi}:00+00:00`;
}
