// Request Cache-Control parsing (RFC 9111 §5.2.1): every directive on its own, the argument
// forms, invalid and repeated values, and junk that must not make the cache more permissive.
import { describe, expect, it } from 'vitest';
import {
  DELTA_SECONDS_MAX,
  formatDirectives,
  NO_DIRECTIVES,
  parseCacheControl,
} from '../../src/cache/cache-control.ts';

describe('parseCacheControl: each request directive', () => {
  it('absent header: no directives', () => {
    expect(parseCacheControl(undefined)).toEqual(NO_DIRECTIVES);
    expect(parseCacheControl('')).toEqual(NO_DIRECTIVES);
  });

  it('max-age=N (§5.2.1.1) gives the oldest acceptable age in seconds', () => {
    expect(parseCacheControl('max-age=60').maxAge).toBe(60);
    expect(parseCacheControl('max-age=0').maxAge).toBe(0);
  });

  it('max-stale without a value (§5.2.1.2) accepts any staleness', () => {
    expect(parseCacheControl('max-stale').maxStale).toBe(true);
  });

  it('max-stale=N (§5.2.1.2) accepts staleness up to N seconds', () => {
    expect(parseCacheControl('max-stale=300').maxStale).toBe(300);
  });

  it('min-fresh=N (§5.2.1.3) asks for N more seconds of freshness', () => {
    expect(parseCacheControl('min-fresh=120').minFresh).toBe(120);
  });

  it('no-cache (§5.2.1.4)', () => {
    expect(parseCacheControl('no-cache')).toMatchObject({
      noCache: true,
      noStore: false,
      onlyIfCached: false,
    });
  });

  it('no-store (§5.2.1.5)', () => {
    expect(parseCacheControl('no-store')).toMatchObject({
      noCache: false,
      noStore: true,
      onlyIfCached: false,
    });
  });

  it('no-transform (§5.2.1.6) is accepted and has no effect on a gateway that never transforms', () => {
    expect(parseCacheControl('no-transform')).toEqual(NO_DIRECTIVES);
  });

  it('only-if-cached (§5.2.1.7)', () => {
    expect(parseCacheControl('only-if-cached')).toMatchObject({ onlyIfCached: true });
  });

  it('stale-if-error=N (RFC 5861 §4) bounds stale answers on upstream failure', () => {
    expect(parseCacheControl('stale-if-error=600').staleIfError).toBe(600);
  });
});

describe('parseCacheControl: syntax', () => {
  it('is case-insensitive in directive names', () => {
    expect(parseCacheControl('Max-Age=5, NO-CACHE, Only-If-Cached')).toMatchObject({
      maxAge: 5,
      noCache: true,
      onlyIfCached: true,
    });
  });

  it('tolerates spaces and tabs around commas and the equals sign, and empty list members', () => {
    expect(parseCacheControl(' ,\tmax-age = 7 ,, min-fresh=3 , ')).toMatchObject({ maxAge: 7, minFresh: 3 });
  });

  it('accepts quoted-string arguments (§5.2: recipients accept both forms)', () => {
    expect(parseCacheControl('max-age="30", max-stale="10"')).toMatchObject({ maxAge: 30, maxStale: 10 });
  });

  it('does not split at a comma inside a quoted string', () => {
    const d = parseCacheControl('foo="a, no-store", max-age=9');
    expect(d.noStore).toBe(false);
    expect(d.maxAge).toBe(9);
  });

  it('ignores unknown directives, with or without arguments', () => {
    expect(parseCacheControl('community="UCI", private, x-thing=1, max-age=4')).toEqual({
      ...NO_DIRECTIVES,
      maxAge: 4,
    });
  });

  it('joins repeated header lines as one list', () => {
    expect(parseCacheControl(['max-age=10', 'no-store'])).toMatchObject({ maxAge: 10, noStore: true });
  });

  it('never throws on junk', () => {
    for (const junk of ['=', '"', ',,,', 'max-age="', '\\', 'a=b=c', 'max-age=5"x', '\u0000max-age=1']) {
      expect(() => parseCacheControl(junk)).not.toThrow();
    }
  });
});

describe('parseCacheControl: invalid and repeated values (RFC 9111 §4.2.1, §1.2.2)', () => {
  it('an invalid max-age is treated as 0 (a stale answer, never "any age")', () => {
    for (const bad of ['max-age=abc', 'max-age=-5', 'max-age=1.5', 'max-age=', 'max-age', 'max-age=5s']) {
      expect(parseCacheControl(bad).maxAge, bad).toBe(0);
    }
  });

  it('an invalid max-stale is treated as 0 (no staleness accepted)', () => {
    expect(parseCacheControl('max-stale=soon').maxStale).toBe(0);
  });

  it('an invalid min-fresh is ignored', () => {
    expect(parseCacheControl('min-fresh=-1').minFresh).toBeUndefined();
  });

  it('an invalid stale-if-error is treated as 0', () => {
    expect(parseCacheControl('stale-if-error=x').staleIfError).toBe(0);
  });

  it('delta-seconds beyond 2^31 are clamped to 2^31', () => {
    expect(parseCacheControl('max-age=99999999999999999999').maxAge).toBe(DELTA_SECONDS_MAX);
  });

  it('a repeated directive keeps its most restrictive value', () => {
    expect(parseCacheControl('max-age=100, max-age=10').maxAge).toBe(10);
    expect(parseCacheControl('max-stale=50, max-stale').maxStale).toBe(50);
    expect(parseCacheControl('max-stale, max-stale=50').maxStale).toBe(50);
    expect(parseCacheControl('min-fresh=5, min-fresh=50').minFresh).toBe(50);
  });

  it('formats back to an equivalent header', () => {
    const d = parseCacheControl('max-age=5, max-stale, min-fresh=1, no-cache, no-store, only-if-cached');
    expect(parseCacheControl(formatDirectives(d))).toEqual(d);
  });
});
