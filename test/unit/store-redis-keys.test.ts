// The Redis key mapping: INN hash tags, one slot per atomic step, and logical names recoverable
// for keys(prefix).
import { describe, expect, it } from 'vitest';
import { globEscape, innTag, RedisKeys } from '../../src/store/redis/keys.ts';

describe('Redis key mapping', () => {
  const k = new RedisKeys('cpgw:');

  it('tags on the first 10- or 12-digit segment', () => {
    expect(innTag('window:7707083893')).toBe('7707083893');
    expect(innTag('person:500100732259:card')).toBe('500100732259');
    expect(innTag('search:q=7707083893')).toBeNull();
    expect(innTag('bank:044525225')).toBeNull(); // a 9-digit BIC is not an INN
    expect(k.state('window:7707083893')).toBe('cpgw:s:{7707083893}:window:7707083893');
    expect(k.cache('dossier:7707083893:full')).toBe('cpgw:c:{7707083893}:dossier:7707083893:full');
    expect(k.cacheTag('inn:7707083893')).toBe('cpgw:t:{7707083893}:inn:7707083893');
    expect(k.state('lock:coalesce:ab12')).toBe('cpgw:s:lock:coalesce:ab12');
  });

  it('puts every key of one script in one slot', () => {
    const tag = (key: string) => /\{([^}]*)\}/.exec(key)?.[1];
    expect(new Set(['a', 'b:c'].flatMap((c) => [k.budgetCounter(c), k.budgetHolds(c)]).map(tag))).toEqual(
      new Set(['money']),
    );
    expect(new Set(['key', 'search'].flatMap((c) => [k.slots(c), k.pause(c)]).map(tag))).toEqual(
      new Set(['limits']),
    );
    expect(new Set([k.cacheSizes, k.cacheExpiry, k.cacheBytes].map(tag))).toEqual(new Set(['cache']));
  });

  it('maps state keys back to their logical names', () => {
    for (const logical of ['window:7707083893', 'lock:x', 'a:{b}:c', 'x:123456789012:y']) {
      expect(k.logicalState(k.state(logical))).toBe(logical);
    }
    expect(k.logicalState('cpgw:c:window:1')).toBeNull();
    expect(k.logicalState('cpgw:s:{1234567890}:window:7707083893')).toBeNull(); // not a tag we write
  });

  it('escapes glob characters in prefixes', () => {
    expect(globEscape('a*b?[c]\\')).toBe('a\\*b\\?\\[c\\]\\\\');
    expect(new RedisKeys('t*:').statePatterns('win[')).toEqual(['t\\*:s:win\\[*', 't\\*:s:{*}:win\\[*']);
    expect(() => new RedisKeys('{x}:')).toThrow(RangeError);
  });
});
