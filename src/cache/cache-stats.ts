// Counters of one gateway replica's cache traffic, per route: hits, stale answers, misses,
// refreshes, only-if-cached refusals, stores and store errors; plus the entries this replica
// wrote that have neither expired nor been purged. Bytes come from the store, not from here.
//
// The entry count is an upper bound: entries the memory store evicted under byte pressure, or
// that other replicas wrote, are not seen. The index is capped so it cannot grow without end.
//
// Must never: read the clock itself (callers pass `now`), or hold more than MAX_TRACKED keys.

export interface RouteCacheStats {
  /** Served from the cache, fresh (X-Cache: HIT). */
  hits: number;
  /** Served stale: max-stale accepted by the client, or the upstream failed (X-Cache: STALE). */
  stale: number;
  /** Went upstream: nothing stored, or the stored answer was too old for this request. */
  misses: number;
  /** Went upstream over a usable entry: no-cache, or a free refresh inside an open window. */
  refreshes: number;
  /** only-if-cached with nothing usable (504 not_cached). */
  notCached: number;
  /** Answers written to the store. */
  stores: number;
  /** Store reads or writes that failed (the request went on without the cache). */
  errors: number;
  /** Entries this replica wrote, not yet expired or purged (upper bound). */
  entries: number;
}

export interface CacheStats {
  /** Bytes the store reports for the cache; null when the store could not be asked. */
  bytes: number | null;
  /** Sum of routes[*].entries. */
  entries: number;
  /** True when the entry index hit its cap: `entries` then undercounts. */
  entriesCapped: boolean;
  routes: Record<string, RouteCacheStats>;
}

export type Counter = Exclude<keyof RouteCacheStats, 'entries'>;

const MAX_TRACKED = 200_000;

interface Tracked {
  route: string;
  inn: string | null;
  expiresAt: number;
}

export class CacheCounters {
  private readonly routes = new Map<string, RouteCacheStats>();
  private readonly tracked = new Map<string, Tracked>();
  private capped = false;

  count(route: string, counter: Counter): void {
    this.of(route)[counter]++;
  }

  track(key: string, route: string, inn: string | null, expiresAt: number, now: number): void {
    if (!this.tracked.has(key) && this.tracked.size >= MAX_TRACKED) {
      this.sweep(now);
      if (this.tracked.size >= MAX_TRACKED) {
        this.capped = true;
        return;
      }
    }
    this.tracked.delete(key); // re-insert: keeps the Map in write order
    this.tracked.set(key, { route, inn, expiresAt });
  }

  untrack(key: string): void {
    this.tracked.delete(key);
  }

  untrackInn(inn: string): void {
    for (const [key, t] of this.tracked) if (t.inn === inn) this.tracked.delete(key);
  }

  snapshot(now: number, bytes: number | null): CacheStats {
    this.sweep(now);
    const routes: Record<string, RouteCacheStats> = {};
    for (const [route, stats] of this.routes) routes[route] = { ...stats, entries: 0 };
    for (const t of this.tracked.values()) {
      const stats = routes[t.route] ?? { ...emptyStats() };
      routes[t.route] = stats;
      stats.entries++;
    }
    return { bytes, entries: this.tracked.size, entriesCapped: this.capped, routes };
  }

  private sweep(now: number): void {
    for (const [key, t] of this.tracked) if (t.expiresAt <= now) this.tracked.delete(key);
  }

  private of(route: string): RouteCacheStats {
    let stats = this.routes.get(route);
    if (!stats) {
      stats = emptyStats();
      this.routes.set(route, stats);
    }
    return stats;
  }
}

function emptyStats(): RouteCacheStats {
  return { hits: 0, stale: 0, misses: 0, refreshes: 0, notCached: 0, stores: 0, errors: 0, entries: 0 };
}
