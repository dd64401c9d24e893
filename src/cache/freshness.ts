// The one decision the cache makes about a stored entry: serve it, or go upstream and why.
// Inputs are plain numbers (age, lifetime) and the request's directives, so every rule of
// RFC 9111 §4.2 / §5.2.1 and the window rule is testable without a store or a clock.
//
// Rules, in order:
//   - no-cache: go upstream (the entry stays available for stale-if-error).
//   - max-age=N: an entry older than N s is not acceptable.
//   - min-fresh=N: an entry that will not stay fresh for N more seconds is not acceptable.
//   - fresh (age < lifetime): serve (HIT) - unless a free window is open for the company and
//     the entry is older than windowRefreshAfterMs: then refresh it upstream at no charge.
//   - stale, within the client's max-stale: serve (STALE) outside a window (it avoids a
//     charge); inside an open window refresh instead (it costs nothing).
//   - otherwise: go upstream (expired).
//   - only-if-cached turns every "go upstream" into not_cached, except a window refresh of an
//     entry the client accepts, which is served instead.
//
// Must never: serve an entry the client's max-age, min-fresh or max-stale rules out.
import type { RequestDirectives } from './cache-control.ts';

export type FetchReason = 'miss' | 'expired' | 'no-cache' | 'window-refresh';

export type Decision =
  | { serve: true; stale: boolean }
  | { serve: false; reason: Exclude<FetchReason, 'miss'> }
  | { serve: false; reason: 'not_cached' };

export interface FreshnessInput {
  ageMs: number;
  lifetimeMs: number;
  directives: RequestDirectives;
  /** A coverage window is open for the company, so an upstream read is free. */
  windowOpen: boolean;
  /** The route is covered by coverage windows (dossier, section, requisites). */
  windowed: boolean;
  windowRefreshAfterMs: number | null;
}

export function decide(input: FreshnessInput): Decision {
  const { ageMs, lifetimeMs, directives: d } = input;
  const upstream = (reason: Exclude<FetchReason, 'miss'>): Decision =>
    d.onlyIfCached ? { serve: false, reason: 'not_cached' } : { serve: false, reason };

  if (d.noCache) return upstream('no-cache');
  if (d.maxAge !== undefined && ageMs > d.maxAge * 1000) return upstream('expired');
  if (d.minFresh !== undefined && lifetimeMs - ageMs < d.minFresh * 1000) return upstream('expired');

  const freeRefresh = input.windowOpen && input.windowed && !d.onlyIfCached;
  const fresh = ageMs < lifetimeMs;
  if (fresh) {
    const limit = input.windowRefreshAfterMs;
    if (freeRefresh && limit !== null && ageMs > limit) return { serve: false, reason: 'window-refresh' };
    return { serve: true, stale: false };
  }
  const staleMs = ageMs - lifetimeMs;
  const acceptedStale = d.maxStale === true || (d.maxStale !== undefined && staleMs <= d.maxStale * 1000);
  if (!acceptedStale) return upstream('expired');
  if (freeRefresh) return { serve: false, reason: 'window-refresh' };
  return { serve: true, stale: true };
}

/**
 * stale-if-error: whether an entry may stand in for a failed upstream call. Bounded by the
 * configured max staleness and, when the client sent one, by its stale-if-error=N.
 */
export function usableOnError(input: {
  ageMs: number;
  lifetimeMs: number;
  maxStaleMs: number;
  directives: RequestDirectives;
}): boolean {
  const { ageMs, lifetimeMs, directives: d } = input;
  let limit = input.maxStaleMs;
  if (d.staleIfError !== undefined) limit = Math.min(limit, d.staleIfError * 1000);
  return ageMs - lifetimeMs <= limit;
}
