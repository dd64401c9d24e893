// The limiter's classes: their defaults (the upstream spec's "Limits" table), which classes each
// gateway route spends, which class an upstream 429 belongs to, and the names of the derived
// pacing (how many calls may start in a short window). The store classes derived from these (per-app
// caps, shares, the upstream's per-minute key cap) are typed in store-class.ts.
//
// Pure data and pure functions: no clock, no I/O. Must never decide whether a call may start
// (that is rate-governor.ts) or know how a backend stores a class.
import { type LimitClassName, type RouteName, routeSpec } from '../route-table.ts';

// The names are declared by the route table (routes list the classes they spend); this module
// gives them their defaults and the limiter imports them from here.
export type { LimitClassName };

export const LIMIT_CLASS_NAMES: readonly LimitClassName[] = ['key', 'search', 'suggest', 'check'];

export interface LimitClassConfig {
  name: LimitClassName;
  /** Upstream calls allowed in any interval of windowMs. */
  limit: number;
  windowMs: number;
  /** Deadline for a request of this class when the client sends no X-Max-Wait-Ms. */
  maxWaitMs: number;
  /**
   * Pacing: at most `burst` calls start within any burst * windowMs / limit (the same sliding
   * log, taken atomically with the class). Spreads a saturated window's starts evenly so slots
   * keep freeing and a newcomer waits about windowMs * burst / limit, not a whole window behind
   * another app's burst. burst >= limit turns pacing off.
   */
  burst: number;
  /**
   * Pacing engages only when it is needed: a call starts at once, unpaced, while the class has
   * more than `reserve` of its window left and no other app competes for it (waits for it, or was
   * refused it within the window). The last `reserve` starts of a window, and every start while
   * apps compete, are paced. `reserve >= limit` paces every start.
   */
  reserve: number;
  /**
   * A start counts in the class's log for windowMs plus this margin: two calls the log keeps a
   * window apart may reach the upstream up to this much closer together (event loop, a new
   * connection), and the upstream's window must still never see more than `limit`.
   */
  edgeMarginMs: number;
  /**
   * While the Store is unreachable, the most this replica alone starts per window (its
   * conservative local share). Default: limit / the expected number of replicas.
   */
  localLimit?: number;
}

export const MINUTE_MS = 60_000;

/**
 * Defaults from the upstream spec (section Limits). `key` follows X-RateLimit-Limit at run
 * time; `check` is the "cold fresh check" limit (see coldCheck below).
 */
export const DEFAULT_LIMIT_CLASSES: Readonly<
  Record<LimitClassName, Omit<LimitClassConfig, 'reserve' | 'edgeMarginMs'>>
> = {
  key: { name: 'key', limit: 60, windowMs: MINUTE_MS, maxWaitMs: 10_000, burst: 5 },
  search: { name: 'search', limit: 20, windowMs: MINUTE_MS, maxWaitMs: 10_000, burst: 1 },
  suggest: { name: 'suggest', limit: 120, windowMs: MINUTE_MS, maxWaitMs: 2_000, burst: 10 },
  // Both cold checks of a minute may start together (pacing off), and a queued check waits at
  // most 15 s so that the wait plus the upstream's own 10 s fit the client's advised 30 s.
  check: { name: 'check', limit: 2, windowMs: MINUTE_MS, maxWaitMs: 15_000, burst: 2 },
};

/**
 * The default `reserve` of a class: one pacing batch (`burst`), so a cold burst of up to the
 * window's allowance less one batch starts at once; searches (the scarcest class, and the one a
 * flood starves others of) are paced from the first start, a whole window of them.
 */
export function defaultReserve(c: Pick<LimitClassConfig, 'name' | 'limit' | 'burst'>): number {
  return c.name === 'search' ? c.limit : c.burst;
}

/**
 * The default edge margin of a class: a sixtieth of its window (1 s of a minute), at least 50 ms
 * and at most 1 s. Dispatch jitter is milliseconds to tens of them; the scaled windows of the
 * tests keep the 50 ms.
 */
export function defaultEdgeMarginMs(windowMs: number): number {
  return Math.min(1000, Math.max(50, Math.ceil(windowMs / 60)));
}

/** The defaults with any overrides applied; every class is always present. */
export function limitClassesWith(
  overrides: Partial<Record<LimitClassName, Partial<Omit<LimitClassConfig, 'name'>>>> = {},
): Record<LimitClassName, LimitClassConfig> {
  const out = {} as Record<LimitClassName, LimitClassConfig>;
  for (const name of LIMIT_CLASS_NAMES) {
    const given = { ...DEFAULT_LIMIT_CLASSES[name], ...overrides[name], name };
    const merged: LimitClassConfig = {
      ...given,
      reserve: given.reserve ?? defaultReserve(given),
      edgeMarginMs: given.edgeMarginMs ?? defaultEdgeMarginMs(given.windowMs),
    };
    if (!Number.isSafeInteger(merged.limit) || merged.limit < 0)
      throw new RangeError(`limit of ${name} must be an integer >= 0, got ${merged.limit}`);
    if (!Number.isFinite(merged.windowMs) || merged.windowMs <= 0)
      throw new RangeError(`windowMs of ${name} must be > 0, got ${merged.windowMs}`);
    if (!Number.isFinite(merged.maxWaitMs) || merged.maxWaitMs < 0)
      throw new RangeError(`maxWaitMs of ${name} must be >= 0, got ${merged.maxWaitMs}`);
    if (!Number.isSafeInteger(merged.burst) || merged.burst < 1)
      throw new RangeError(`burst of ${name} must be an integer >= 1, got ${merged.burst}`);
    if (!Number.isFinite(merged.edgeMarginMs) || merged.edgeMarginMs < 0)
      throw new RangeError(`edgeMarginMs of ${name} must be >= 0, got ${merged.edgeMarginMs}`);
    if (!Number.isSafeInteger(merged.reserve) || merged.reserve < 0)
      throw new RangeError(`reserve of ${name} must be an integer >= 0, got ${merged.reserve}`);
    if (
      merged.localLimit !== undefined &&
      (!Number.isSafeInteger(merged.localLimit) || merged.localLimit < 0)
    )
      throw new RangeError(`localLimit of ${name} must be an integer >= 0, got ${merged.localLimit}`);
    out[name] = merged;
  }
  return out;
}

/**
 * Classes a route spends, the binding one first (it names the queue, the default deadline and
 * the class reported in X-RateLimit-* for the app).
 *
 * POST /v1/check lists `check` (the cold fresh checks): the caller skips it for a call it knows
 * cannot start a cold check (AcquireRequest.skip) and refunds it when the answer shows none was
 * started (Permit.refund); see docs/rate-limits.md "Cold checks".
 * `openapi`: the spec states no limit, so it spends nothing. Suggest does not spend the key.
 */
export function routeClasses(route: RouteName): LimitClassName[] {
  return [...routeSpec(route).limits];
}

/** The class an upstream 429 `rate_limited` on this route pauses. */
export function pausedClassOf(route: RouteName): LimitClassName | null {
  const classes = routeClasses(route);
  return classes[0] ?? null;
}

/**
 * The pacing of a class (its store class is `{ kind: 'pace' }`), or null when pacing is off. Its
 * window is the time `burst` calls take at the class's full rate. Whether a call is paced is
 * decided per call (startsAtOnceBelow).
 */
export function paceOf(
  limit: number,
  windowMs: number,
  burst: number,
): { limit: number; windowMs: number } | null {
  if (limit <= 0 || burst >= limit) return null;
  return { limit: burst, windowMs: Math.ceil((windowMs * burst) / limit) };
}

/**
 * While nobody competes for the class, a call starts at once (unpaced) while fewer than this many
 * starts are in the class's window; null when every start is paced (or pacing is off).
 */
export function startsAtOnceBelow(limit: number, burst: number, reserve: number): number | null {
  if (limit <= 0 || burst >= limit || reserve >= limit) return null;
  return limit - reserve;
}
