// The cache role of the Store: evictable entries (size-bounded in memory; Redis's maxmemory
// bounds the total), tagged for group purges. Compressed bodies are the caller's job.
//
// Must never: hold state that must survive eviction (that is the state role), or count bytes
// the caller did not put through cacheSet.

export interface CacheSetOptions {
  ttlMs: number;
  /** Tags for group purge, e.g. ["inn:7707083893"]. */
  tags?: string[];
}

export interface CacheStore {
  cacheGet(key: string): Promise<Buffer | null>;
  /**
   * Several entries at once, in the order asked (null where none): one round trip per hash slot
   * on Redis (keys of one company share one), not one per key.
   */
  cacheGetMany(keys: readonly string[]): Promise<Array<Buffer | null>>;
  cacheSet(key: string, value: Buffer, options: CacheSetOptions): Promise<void>;
  cacheDelete(key: string): Promise<void>;
  /**
   * Replaces the entry with `value` only when the stored one starts with the bytes `expect`,
   * keeping its TTL and tags (a compressed copy of the same answer swapped in after it was
   * stored uncompressed); true when replaced. Never creates an entry.
   */
  cacheReplace(key: string, expect: Buffer, value: Buffer): Promise<boolean>;
  /**
   * Deletes every cache entry carrying the tag; returns how many were still cached. (Redis may also
   * drop an entry re-set under the same key without the tag: over-purging a cache is harmless.)
   */
  cachePurgeTag(tag: string): Promise<number>;
  /** Bytes currently held by the cache (approximate for Redis: bytes this store wrote and still tracks). */
  cacheBytes(): Promise<number>;
}
