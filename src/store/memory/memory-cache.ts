// The memory store's cache role: an lru-cache bounded by bytes (body + key of every entry), with
// a tag index for group purges. TTLs follow the injected clock.
//
// Must never: let the cache grow past its byte bound, keep a tag pointing at an evicted entry
// counted in a purge, or read Date.now().
import { LRUCache } from 'lru-cache';
import type { Clock } from '../../clock.ts';
import type { CacheSetOptions, CacheStore } from '../cache-store.ts';
import { ttlOf } from '../store-util.ts';

export class MemoryCache implements CacheStore {
  private readonly cache: LRUCache<string, Buffer>;
  private readonly keyTags = new Map<string, string[]>();
  private readonly tagKeys = new Map<string, Set<string>>();

  constructor(clock: Clock, cacheMaxBytes: number) {
    if (!Number.isSafeInteger(cacheMaxBytes) || cacheMaxBytes <= 0) {
      throw new RangeError(`cacheMaxBytes must be a positive integer, got ${cacheMaxBytes}`);
    }
    this.cache = new LRUCache<string, Buffer>({
      maxSize: cacheMaxBytes,
      sizeCalculation: (value, key) => entrySize(key, value),
      // TTLs follow the injected clock; resolution 0 = ask the clock on every check (no timers).
      perf: { now: () => clock.now() },
      ttlResolution: 0,
      dispose: (_value, key) => this.unlinkTags(key),
    });
  }

  async cacheGet(key: string): Promise<Buffer | null> {
    return this.cache.get(key) ?? null;
  }

  async cacheGetMany(keys: readonly string[]): Promise<Array<Buffer | null>> {
    return keys.map((key) => this.cache.get(key) ?? null);
  }

  /** cacheGet without waiting (the hit path): the same entry, the same TTL and recency rules. */
  peek(key: string): Buffer | null {
    return this.cache.get(key) ?? null;
  }

  async cacheSet(key: string, value: Buffer, options: CacheSetOptions): Promise<void> {
    const ttl = ttlOf(options.ttlMs);
    this.unlinkTags(key);
    this.cache.set(key, value, { ttl });
    // An entry larger than the whole bound is not stored (and any old copy is gone).
    if (!this.cache.has(key) || !options.tags?.length) return;
    const tags = [...new Set(options.tags)];
    this.keyTags.set(key, tags);
    for (const tag of tags) {
      const keys = this.tagKeys.get(tag) ?? new Set<string>();
      this.tagKeys.set(tag, keys);
      keys.add(key);
    }
  }

  async cacheDelete(key: string): Promise<void> {
    this.cache.delete(key);
  }

  async cacheReplace(key: string, expect: Buffer, value: Buffer): Promise<boolean> {
    const current = this.cache.peek(key);
    if (!current || current.length < expect.length || !current.subarray(0, expect.length).equals(expect))
      return false;
    const ttl = this.cache.getRemainingTTL(key);
    const tags = this.keyTags.get(key);
    this.cache.set(key, value, Number.isFinite(ttl) && ttl > 0 ? { ttl } : {}); // dispose unlinks its tags
    if (!this.cache.has(key)) return false;
    if (tags) {
      this.keyTags.set(key, tags);
      for (const tag of tags) {
        const keys = this.tagKeys.get(tag) ?? new Set<string>();
        this.tagKeys.set(tag, keys);
        keys.add(key);
      }
    }
    return true;
  }

  async cachePurgeTag(tag: string): Promise<number> {
    const keys = this.tagKeys.get(tag);
    if (!keys) return 0;
    let purged = 0;
    for (const key of [...keys]) {
      if (this.cache.has(key)) purged++;
      this.cache.delete(key); // dispose unlinks its tags
    }
    this.tagKeys.delete(tag);
    return purged;
  }

  async cacheBytes(): Promise<number> {
    this.cache.purgeStale();
    return this.cache.calculatedSize;
  }

  private unlinkTags(key: string): void {
    const tags = this.keyTags.get(key);
    if (!tags) return;
    this.keyTags.delete(key);
    for (const tag of tags) {
      const keys = this.tagKeys.get(tag);
      keys?.delete(key);
      if (keys?.size === 0) this.tagKeys.delete(tag);
    }
  }
}

function entrySize(key: string, value: Buffer): number {
  // lru-cache requires a positive integer; an empty body still costs its key.
  return Math.max(1, value.length + Buffer.byteLength(key));
}
