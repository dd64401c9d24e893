// App and admin tokens: issuing (cpgw token new), hashing (SHA-256, the only form config
// holds) and constant-time matching. A token itself is never written anywhere or logged; the
// app lookup keeps the tokens that matched an app in memory (lookupToken), as the requests that
// carry them do.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export function newToken(): string {
  return `cpgw_${randomBytes(32).toString('base64url')}`;
}

export function tokenHash(token: string): string {
  return `sha256:${createHash('sha256').update(token, 'utf8').digest('hex')}`;
}

/** Reads a bearer token from an Authorization header value. */
export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

/**
 * Finds the entry whose hash matches the token. Every entry is compared, in constant time,
 * whatever matches earlier, so timing says nothing about which hashes exist.
 */
export function matchToken<T extends { tokenHash: string }>(token: string, entries: readonly T[]): T | null {
  const presented = Buffer.from(tokenHash(token));
  let found: T | null = null;
  for (const entry of entries) {
    const expected = Buffer.from(entry.tokenHash);
    if (expected.length === presented.length && timingSafeEqual(expected, presented)) found = entry;
  }
  return found;
}

/**
 * Per configuration's entries (a reload makes a new array): its entries by hash, and the tokens
 * that matched one of them (at most one per entry).
 */
const lookups = new WeakMap<
  readonly object[],
  { byHash: Map<string, unknown>; byToken: Map<string, unknown> }
>();

/**
 * The app whose hash is the token's, through a map built once per configuration's entries (a
 * reload makes a new array, so new maps): the authenticate stage and the hit path both use it.
 * A map lookup's timing can at most tell whether SHA-256 of a guess shares a prefix with a held
 * hash, which says nothing about any token; the admin doors keep matchToken's full scan.
 * A token that matched is remembered with its entry, so its next request hashes nothing (SHA-256
 * is ~0.8 us, a quarter of what a cache HIT costs over a bare node:http server); a token that
 * matched nothing is not, so the memo holds at most one token per entry whatever is presented.
 */
export function lookupToken<T extends { tokenHash: string }>(token: string, entries: readonly T[]): T | null {
  let maps = lookups.get(entries) as { byHash: Map<string, T>; byToken: Map<string, T> } | undefined;
  if (!maps) {
    // Later entries win, as matchToken's scan does.
    maps = { byHash: new Map(entries.map((entry) => [entry.tokenHash, entry])), byToken: new Map() };
    lookups.set(entries, maps);
  }
  const remembered = maps.byToken.get(token);
  if (remembered) return remembered;
  const found = maps.byHash.get(tokenHash(token)) ?? null;
  if (found) maps.byToken.set(token, found);
  return found;
}
