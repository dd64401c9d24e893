// Fixed-window counters aligned to the emulator clock's minute (and the Moscow day for the
// person limit). Decisions are values: a refusal names its code and Retry-After; a refused
// request spends nothing. It never reads Date.now().
import type { Clock } from '../clock.ts';
import type { LimitOptions } from './emulator-config.ts';
import { mskDayStart, secondsUntil } from './time-format.ts';

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * 60 * 1000;

export type LimitClass = 'key' | 'search' | 'suggest' | 'cold_check';

export interface Budget {
  limit: number;
  remaining: number;
  /** Unix seconds when the counter resets. */
  reset: number;
}

export type LimitDecision =
  | { ok: true }
  | { ok: false; code: 'rate_limited' | 'quota_exceeded'; retryAfter: number; limit: string };

interface Counter {
  window: number;
  count: number;
}

export class RateLimiter {
  private counters = new Map<string, Counter>();
  private persons = new Map<number, { day: number; inns: Set<string> }>();

  constructor(
    private readonly clock: Clock,
    private readonly limits: LimitOptions,
  ) {}

  private limitOf(cls: LimitClass): number {
    switch (cls) {
      case 'key':
        return this.limits.keyPerMinute;
      case 'search':
        return this.limits.searchPerMinute;
      case 'suggest':
        return this.limits.suggestPerMinute;
      case 'cold_check':
        return this.limits.coldChecksPerMinute;
    }
  }

  private used(id: string, window: number): number {
    const counter = this.counters.get(id);
    return counter && counter.window === window ? counter.count : 0;
  }

  /**
   * Takes one unit from every named counter, or none when any is spent. `ids` pairs a class
   * with its subject (key token or account id).
   */
  take(ids: Array<[LimitClass, string]>): LimitDecision {
    const now = this.clock.now();
    const window = Math.floor(now / MINUTE_MS);
    for (const [cls, subject] of ids) {
      if (this.used(`${cls}:${subject}`, window) >= this.limitOf(cls)) {
        return {
          ok: false,
          code: 'rate_limited',
          retryAfter: secondsUntil(now, (window + 1) * MINUTE_MS),
          limit: cls,
        };
      }
    }
    for (const [cls, subject] of ids) {
      const id = `${cls}:${subject}`;
      this.counters.set(id, { window, count: this.used(id, window) + 1 });
    }
    return { ok: true };
  }

  /** The budget a key has in the current minute (the X-RateLimit-* headers). */
  budget(cls: LimitClass, subject: string): Budget {
    const window = Math.floor(this.clock.now() / MINUTE_MS);
    const limit = this.limitOf(cls);
    return {
      limit,
      remaining: Math.max(0, limit - this.used(`${cls}:${subject}`, window)),
      reset: ((window + 1) * MINUTE_MS) / 1000,
    };
  }

  /** Whether a person lookup may proceed: repeats of today's INNs always may. */
  checkPerson(accountId: number, inn: string): LimitDecision {
    const now = this.clock.now();
    const day = mskDayStart(now);
    const today = this.personsToday(accountId, day);
    if (today.has(inn) || today.size < this.limits.personsPerDay) return { ok: true };
    return {
      ok: false,
      code: 'quota_exceeded',
      retryAfter: secondsUntil(now, day + DAY_MS),
      limit: 'persons_daily',
    };
  }

  /** Records a served person lookup against today's distinct-INN count. */
  recordPerson(accountId: number, inn: string): void {
    this.personsToday(accountId, mskDayStart(this.clock.now())).add(inn);
  }

  private personsToday(accountId: number, day: number): Set<string> {
    const entry = this.persons.get(accountId);
    if (entry && entry.day === day) return entry.inns;
    const fresh = { day, inns: new Set<string>() };
    this.persons.set(accountId, fresh);
    return fresh.inns;
  }

  reset(): void {
    this.counters.clear();
    this.persons.clear();
  }
}
