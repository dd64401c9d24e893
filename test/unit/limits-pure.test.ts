// The limiter's pure parts: the route -> class table, header reading (Retry-After in seconds,
// Reset in Unix seconds), the slot estimate's arithmetic and the fair queue's order.
import { describe, expect, it } from 'vitest';
import { FairQueue } from '../../src/limits/fair-queue.ts';
import {
  DEFAULT_LIMIT_CLASSES,
  limitClassesWith,
  pausedClassOf,
  routeClasses,
} from '../../src/limits/limit-classes.ts';
import { startEstimateMs } from '../../src/limits/slot-estimate.ts';
import { readUpstreamSignals, retryAfterMs } from '../../src/limits/upstream-signals.ts';

const NOW = Date.UTC(2026, 0, 15, 9, 0, 0);
const opts = { fallbackPauseMs: 1000, maxPauseMs: 600_000, maxResetAheadMs: 60_000 };

describe('limit classes', () => {
  it('defaults follow the spec: key 60, search 20, suggest 120, cold check 2 per minute', () => {
    expect(Object.values(DEFAULT_LIMIT_CLASSES).map((c) => [c.name, c.limit, c.windowMs])).toEqual([
      ['key', 60, 60_000],
      ['search', 20, 60_000],
      ['suggest', 120, 60_000],
      ['check', 2, 60_000],
    ]);
  });

  it('maps routes to the classes they spend', () => {
    expect(routeClasses('search')).toEqual(['search', 'key']);
    expect(routeClasses('suggest')).toEqual(['suggest']);
    expect(routeClasses('check_create')).toEqual(['check', 'key']);
    expect(routeClasses('openapi')).toEqual([]);
    for (const r of ['me', 'company', 'section', 'check_poll', 'requisites', 'bank', 'person'] as const)
      expect(routeClasses(r)).toEqual(['key']);
    expect(pausedClassOf('search')).toBe('search');
    expect(pausedClassOf('check_create')).toBe('check');
    expect(pausedClassOf('person')).toBe('key');
    expect(pausedClassOf('openapi')).toBeNull();
  });

  it('rejects nonsense overrides', () => {
    expect(() => limitClassesWith({ search: { limit: -1 } })).toThrow(RangeError);
    expect(() => limitClassesWith({ key: { windowMs: 0 } })).toThrow(RangeError);
    expect(limitClassesWith({ search: { limit: 5, windowMs: 1000 } }).search).toMatchObject({
      limit: 5,
      windowMs: 1000,
    });
  });
});

describe('upstream signals', () => {
  it('reads Retry-After as SECONDS (7 -> 7000 ms), or an HTTP date', () => {
    expect(retryAfterMs('7', NOW)).toBe(7000);
    expect(retryAfterMs('1.5', NOW)).toBe(1500);
    expect(retryAfterMs(new Date(NOW + 3000).toUTCString(), NOW)).toBe(3000);
    expect(retryAfterMs('soon', NOW)).toBeUndefined();
  });

  it('reads limit, remaining and a Unix-seconds reset; pauses only on 429 rate_limited', () => {
    const headers = {
      'x-ratelimit-limit': '60',
      'x-ratelimit-remaining': '4',
      'x-ratelimit-reset': String(NOW / 1000 + 30),
    };
    expect(readUpstreamSignals(200, headers, NOW, opts)).toEqual({
      keyLimit: 60,
      keyRemaining: { remaining: 4, resetAtMs: NOW + 30_000 },
    });
    expect(readUpstreamSignals(429, { 'Retry-After': '7' }, NOW, opts).pauseMs).toBe(7000);
    expect(readUpstreamSignals(429, { 'Retry-After': '7' }, NOW, opts, 'rate_limited').pauseMs).toBe(7000);
    expect(
      readUpstreamSignals(429, { 'Retry-After': '7' }, NOW, opts, 'quota_exceeded').pauseMs,
    ).toBeUndefined();
    expect(readUpstreamSignals(429, {}, NOW, opts).pauseMs).toBe(1000);
    expect(readUpstreamSignals(429, { 'Retry-After': '999999' }, NOW, opts).pauseMs).toBe(600_000);
  });

  it('ignores a reset in the past and clamps one too far ahead to one minute', () => {
    const past = { 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': String(NOW / 1000 - 1) };
    expect(readUpstreamSignals(200, past, NOW, opts).keyRemaining).toBeUndefined();
    const far = { 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': String(NOW / 1000 + 3600) };
    expect(readUpstreamSignals(200, far, NOW, opts).keyRemaining?.resetAtMs).toBe(NOW + 60_000);
  });
});

describe('slot estimate', () => {
  const view = { limit: 2, windowMs: 60_000, used: 2, pausedForMs: 0, ownExpiriesMs: [10_000, 50_000] };
  it('free slot now -> 0; otherwise the (ahead+1)-th expiry, repeating one window later', () => {
    expect(startEstimateMs({ ...view, used: 1, ownExpiriesMs: [10_000] }, 0)).toBe(0);
    expect(startEstimateMs(view, 0)).toBe(10_000);
    expect(startEstimateMs(view, 1)).toBe(50_000);
    expect(startEstimateMs(view, 2)).toBe(70_000);
    expect(startEstimateMs(view, 3)).toBe(110_000);
  });
  it('costs the same for a limit of 100 000 000 (the list of free slots is never built)', () => {
    const huge = { limit: 100_000_000, windowMs: 60_000, used: 2, pausedForMs: 0, ownExpiriesMs: [200, 100] };
    // Building that list (the old way) throws RangeError: Invalid array length at this size.
    expect(startEstimateMs(huge, 0)).toBe(0);
    expect(startEstimateMs(huge, 99_999_997)).toBe(0);
    expect(startEstimateMs(huge, 99_999_998)).toBe(100);
    expect(startEstimateMs(huge, 99_999_999)).toBe(200);
    expect(startEstimateMs(huge, 100_000_000)).toBe(60_000);
  });
  it('a pause delays everything; a zero limit never frees', () => {
    expect(startEstimateMs({ ...view, pausedForMs: 30_000 }, 0)).toBe(30_000);
    expect(startEstimateMs({ ...view, limit: 0 }, 0)).toBe(Number.POSITIVE_INFINITY);
  });
  it("assumes other replicas' slots spread evenly; a lowered limit waits for the log to shrink", () => {
    expect(startEstimateMs({ limit: 4, windowMs: 4000, used: 4, pausedForMs: 0, ownExpiriesMs: [] }, 0)).toBe(
      500,
    );
    expect(startEstimateMs({ ...view, limit: 1 }, 0)).toBe(50_000);
  });
});

describe('fair queue', () => {
  const make = (weights: Record<string, number>, priorities: Record<string, number> = {}) =>
    new FairQueue<{ app: string; n: number }>({
      weightOf: (a) => weights[a] ?? 1,
      priorityOf: (a) => priorities[a] ?? 0,
    });
  const drain = (q: FairQueue<{ app: string; n: number }>, count: number) => {
    const out: string[] = [];
    for (let i = 0; i < count; i++) {
      const next = q.peek();
      if (!next) break;
      q.served(next);
      out.push(next.app);
    }
    return out;
  };

  it('serves backlogged apps in proportion to their weights', () => {
    const q = make({ a: 3, b: 1 });
    for (let i = 0; i < 40; i++) q.push({ app: 'a', n: i });
    for (let i = 0; i < 40; i++) q.push({ app: 'b', n: i });
    const first = drain(q, 20);
    expect(first.filter((a) => a === 'a').length).toBe(15);
  });

  it('puts a newcomer next in line however long another backlog is', () => {
    const q = make({});
    for (let i = 0; i < 100; i++) q.push({ app: 'flood', n: i });
    drain(q, 3);
    q.push({ app: 'trickle', n: 0 });
    expect(drain(q, 2)).toContain('trickle');
  });

  it('strict priority first; removal without service does not charge the app', () => {
    const q = make({}, { vip: 1 });
    const items = Array.from({ length: 5 }, (_, n) => ({ app: 'a', n }));
    for (const it of items) q.push(it);
    q.push({ app: 'vip', n: 0 });
    expect(q.peek()?.app).toBe('vip');
    for (const it of items) q.remove(it);
    expect(q.depthByApp()).toEqual({ vip: 1 });
    q.push({ app: 'a', n: 9 });
    expect(q.ordered().map((x) => x.app)).toEqual(['vip', 'a']);
  });
});
