import { describe, expect, it } from 'vitest';
import { bearerToken, lookupToken, matchToken, newToken, tokenHash } from '../../src/auth/tokens.ts';

describe('app tokens', () => {
  it('issues distinct tokens and hashes them as sha256:hex', () => {
    const a = newToken();
    const b = newToken();
    expect(a).not.toBe(b);
    expect(a).toMatch(/^cpgw_[A-Za-z0-9_-]{43}$/);
    expect(tokenHash(a)).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
  it('matches a token against hashed entries only', () => {
    const t1 = newToken();
    const t2 = newToken();
    const apps = [
      { name: 'a', tokenHash: tokenHash(t1) },
      { name: 'b', tokenHash: tokenHash(t2) },
    ];
    expect(matchToken(t1, apps)?.name).toBe('a');
    expect(matchToken(t2, apps)?.name).toBe('b');
    expect(matchToken(newToken(), apps)).toBeNull();
    expect(matchToken(tokenHash(t1), apps)).toBeNull();
  });
  it('looks an app up by its token, again from memory, and a reload with a new hash ends the old token', () => {
    const t1 = newToken();
    const t2 = newToken();
    const before = [
      { name: 'a', tokenHash: tokenHash(t1) },
      { name: 'b', tokenHash: tokenHash(t2) },
    ];
    expect(lookupToken(t1, before)?.name).toBe('a');
    expect(lookupToken(t1, before)?.name).toBe('a'); // remembered
    expect(lookupToken(t2, before)?.name).toBe('b');
    expect(lookupToken(newToken(), before)).toBeNull();
    expect(lookupToken(tokenHash(t1), before)).toBeNull();
    // A reload (a new entries array) where app a's token was rotated: t1 no longer opens it.
    const t3 = newToken();
    const after = [
      { name: 'a', tokenHash: tokenHash(t3) },
      { name: 'b', tokenHash: tokenHash(t2) },
    ];
    expect(lookupToken(t1, after)).toBeNull();
    expect(lookupToken(t3, after)?.name).toBe('a');
    expect(lookupToken(t2, after)?.name).toBe('b');
    // The old configuration's answers are its own (what a request still running under it sees).
    expect(lookupToken(t1, before)?.name).toBe('a');
  });
  it('reads bearer headers strictly', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer abc')).toBe('abc');
    expect(bearerToken('Basic abc')).toBeNull();
    expect(bearerToken('Bearer')).toBeNull();
    expect(bearerToken(undefined)).toBeNull();
  });
});
