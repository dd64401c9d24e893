import { describe, expect, it } from 'vitest';
import { bearerToken, matchToken, newToken, tokenHash } from '../../src/auth/tokens.ts';

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
  it('reads bearer headers strictly', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer abc')).toBe('abc');
    expect(bearerToken('Basic abc')).toBeNull();
    expect(bearerToken('Bearer')).toBeNull();
    expect(bearerToken(undefined)).toBeNull();
  });
});
