// The state role of the Store: small values never evicted before their TTL (check tickets,
// webhook de-duplication, claims), owner locks with lease renewal, and short-lived binary
// blobs (answers parked for coalesced followers) that are not cache entries and are never
// counted as cache bytes.
//
// Must never: let cache pressure evict a state key, or let a non-owner release/renew a lock.

/**
 * Logical prefixes the workers list: every second (check-tickets.ts' pending checks,
 * webhook-deliveries.ts' due markers) or on every start and sweep (the delivery records and their
 * done markers, webhook-intake.ts' events). Both stores keep an index of these, so listing one
 * does not walk every state key.
 */
export const LISTED_PREFIXES = [
  'check-pending:',
  'webhook:due:',
  'webhook:done:',
  'webhook:out:',
  'webhook:event:',
  // GET /admin/replicas (ops/replica-heartbeat.ts): listed on demand, indexed so a big state
  // keyspace is never walked for a handful of heartbeats.
  'replica:',
] as const;

/** The listed prefix a key or prefix falls under, if any. */
export const listedPrefixOf = (keyOrPrefix: string): string | undefined =>
  LISTED_PREFIXES.find((p) => keyOrPrefix.startsWith(p));

export interface StateStore {
  get(key: string): Promise<string | null>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
  /** Sets only when absent; true when this call set it. */
  setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean>;
  /**
   * State keys (set/setIfAbsent/locks; never cache entries or blobs) with the given logical prefix
   * (admin listings). Bounded by `limit` (default 1000); order unspecified.
   */
  keys(prefix: string, limit?: number): Promise<string[]>;

  /**
   * true when `owner` now holds the lock; it expires after ttlMs unless released or renewed. Not
   * re-entrant: acquiring a lock one already holds answers false. The lock is a state key whose
   * value is the owner.
   */
  acquireLock(key: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Releases only if `owner` still holds it; true when released. */
  releaseLock(key: string, owner: string): Promise<boolean>;
  /** Lease renewal: sets the lock's TTL to ttlMs while `owner` still holds it; true then, else false. */
  renewLock(key: string, owner: string, ttlMs: number): Promise<boolean>;

  /** Stores a binary value for ttlMs, outside the cache (no eviction, no cache byte accounting). */
  putBlob(key: string, value: Buffer, ttlMs: number): Promise<void>;
  getBlob(key: string): Promise<Buffer | null>;
}

/**
 * Values of many state keys, `batch` reads in flight at a time (the role has no multi-get; the
 * workers' listings can name tens of thousands of keys). In the keys' order; null where absent.
 */
export async function getAll(
  store: Pick<StateStore, 'get'>,
  keys: readonly string[],
  batch = 256,
): Promise<Array<string | null>> {
  const values: Array<string | null> = [];
  for (let i = 0; i < keys.length; i += batch) {
    values.push(...(await Promise.all(keys.slice(i, i + batch).map((k) => store.get(k)))));
  }
  return values;
}
