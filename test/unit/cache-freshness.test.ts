// The serve-or-fetch decision for a stored entry: freshness, each request directive, the
// window rule (free refresh inside an open window, stale accepted outside) and stale-if-error.
import { describe, expect, it } from 'vitest';
import { parseCacheControl } from '../../src/cache/cache-control.ts';
import { decide, type FreshnessInput, usableOnError } from '../../src/cache/freshness.ts';

const S = 1000;
const H = 3600 * S;

function input(ageMs: number, cacheControl = '', extra: Partial<FreshnessInput> = {}): FreshnessInput {
  return {
    ageMs,
    lifetimeMs: 6 * H,
    directives: parseCacheControl(cacheControl),
    windowOpen: false,
    windowed: true,
    windowRefreshAfterMs: 15 * 60 * S,
    ...extra,
  };
}

describe('decide: freshness without directives', () => {
  it('serves a fresh entry as a HIT', () => {
    expect(decide(input(5 * H))).toEqual({ serve: true, stale: false });
  });

  it('an entry exactly at its lifetime is stale (fresh means lifetime > age)', () => {
    expect(decide(input(6 * H))).toEqual({ serve: false, reason: 'expired' });
  });

  it('goes upstream for an expired entry', () => {
    expect(decide(input(7 * H))).toEqual({ serve: false, reason: 'expired' });
  });
});

describe('decide: request directives', () => {
  it('max-age=N: refuses an entry older than N seconds even if fresh', () => {
    expect(decide(input(61 * S, 'max-age=60'))).toEqual({ serve: false, reason: 'expired' });
    expect(decide(input(60 * S, 'max-age=60'))).toEqual({ serve: true, stale: false });
  });

  it('max-age=0: only an entry of age 0 is acceptable', () => {
    expect(decide(input(1, 'max-age=0'))).toEqual({ serve: false, reason: 'expired' });
    expect(decide(input(0, 'max-age=0'))).toEqual({ serve: true, stale: false });
  });

  it('max-age larger than the lifetime does not make a stale entry acceptable', () => {
    expect(decide(input(7 * H, 'max-age=86400'))).toEqual({ serve: false, reason: 'expired' });
  });

  it('max-stale: accepts a stale entry of any staleness, served as STALE', () => {
    expect(decide(input(100 * H, 'max-stale'))).toEqual({ serve: true, stale: true });
  });

  it('max-stale=N: accepts staleness up to N seconds and no more', () => {
    expect(decide(input(6 * H + 300 * S, 'max-stale=300'))).toEqual({ serve: true, stale: true });
    expect(decide(input(6 * H + 301 * S, 'max-stale=300'))).toEqual({ serve: false, reason: 'expired' });
  });

  it('max-stale together with max-age: max-age still bounds the age', () => {
    expect(decide(input(7 * H, 'max-stale, max-age=3600'))).toEqual({ serve: false, reason: 'expired' });
  });

  it('min-fresh=N: refuses an entry that will not stay fresh N more seconds', () => {
    expect(decide(input(5 * H, 'min-fresh=3600'))).toEqual({ serve: true, stale: false });
    expect(decide(input(5 * H + 1, 'min-fresh=3600'))).toEqual({ serve: false, reason: 'expired' });
  });

  it('min-fresh and max-stale together: the more restrictive (min-fresh) wins', () => {
    expect(decide(input(7 * H, 'min-fresh=0, max-stale'))).toEqual({ serve: false, reason: 'expired' });
  });

  it('no-cache: goes upstream even for a brand-new entry', () => {
    expect(decide(input(0, 'no-cache'))).toEqual({ serve: false, reason: 'no-cache' });
  });

  it('no-store: does not change what may be served', () => {
    expect(decide(input(5 * H, 'no-store'))).toEqual({ serve: true, stale: false });
  });

  it('only-if-cached: serves an acceptable entry', () => {
    expect(decide(input(5 * H, 'only-if-cached'))).toEqual({ serve: true, stale: false });
  });

  it('only-if-cached: an unacceptable entry is not_cached, never a fetch', () => {
    expect(decide(input(7 * H, 'only-if-cached'))).toEqual({ serve: false, reason: 'not_cached' });
    expect(decide(input(5 * H, 'only-if-cached, max-age=10'))).toEqual({
      serve: false,
      reason: 'not_cached',
    });
  });

  it('only-if-cached with no-cache: the most restrictive answer, not_cached', () => {
    expect(decide(input(0, 'only-if-cached, no-cache'))).toEqual({ serve: false, reason: 'not_cached' });
  });
});

describe('decide: coverage windows', () => {
  it('outside a window, a stale entry the client accepts avoids the charge (STALE)', () => {
    expect(decide(input(7 * H, 'max-stale=7200', { windowOpen: false }))).toEqual({
      serve: true,
      stale: true,
    });
  });

  it('inside an open window, that same stale entry is refreshed upstream for free', () => {
    expect(decide(input(7 * H, 'max-stale=7200', { windowOpen: true }))).toEqual({
      serve: false,
      reason: 'window-refresh',
    });
  });

  it('inside an open window, a fresh entry older than windowRefreshAfterMs is refreshed for free', () => {
    expect(decide(input(2 * H, '', { windowOpen: true }))).toEqual({
      serve: false,
      reason: 'window-refresh',
    });
  });

  it('inside an open window, a recent entry is still a HIT (no rate slot spent)', () => {
    expect(decide(input(10 * 60 * S, '', { windowOpen: true }))).toEqual({ serve: true, stale: false });
  });

  it('windowRefreshAfterMs null: inside a window only entries past their max age are refreshed', () => {
    expect(decide(input(5 * H, '', { windowOpen: true, windowRefreshAfterMs: null }))).toEqual({
      serve: true,
      stale: false,
    });
  });

  it('routes no window covers (bank, search, person) ignore windowOpen', () => {
    expect(decide(input(2 * H, '', { windowOpen: true, windowed: false }))).toEqual({
      serve: true,
      stale: false,
    });
  });

  it('only-if-cached inside a window: serves the acceptable entry instead of refreshing', () => {
    expect(decide(input(2 * H, 'only-if-cached', { windowOpen: true }))).toEqual({
      serve: true,
      stale: false,
    });
  });
});

describe('usableOnError (stale-if-error)', () => {
  const base = { lifetimeMs: 6 * H, maxStaleMs: 24 * H, directives: parseCacheControl('') };

  it('serves an entry stale by up to maxStaleMs', () => {
    expect(usableOnError({ ...base, ageMs: 30 * H })).toBe(true);
  });

  it('refuses an entry stale by more than maxStaleMs', () => {
    expect(usableOnError({ ...base, ageMs: 30 * H + 1 })).toBe(false);
  });

  it('a fresh entry (fetched for no-cache or a window refresh) is always usable', () => {
    expect(usableOnError({ ...base, ageMs: H })).toBe(true);
  });

  it("the client's stale-if-error=N tightens the bound", () => {
    const directives = parseCacheControl('stale-if-error=60');
    expect(usableOnError({ ...base, directives, ageMs: 6 * H + 60 * S })).toBe(true);
    expect(usableOnError({ ...base, directives, ageMs: 6 * H + 61 * S })).toBe(false);
  });

  it('stale-if-error=0 opts out of stale answers on error', () => {
    expect(
      usableOnError({ ...base, directives: parseCacheControl('stale-if-error=0'), ageMs: 6 * H + 1 }),
    ).toBe(false);
  });

  it('the bound never exceeds maxStaleMs, whatever the client asks', () => {
    const directives = parseCacheControl('stale-if-error=999999');
    expect(usableOnError({ ...base, directives, ageMs: 31 * H })).toBe(false);
  });
});
