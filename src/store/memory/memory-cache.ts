// The memory store's cache role: an lru-cache bounded by what its entries cost in the heap (body,
// key, tags and a measured per-entry overhead: see ENTRY_OVERHEAD_BYTES), with a tag index for
// group purges. TTLs follow the injected clock.
//
// Must never: let the cache grow past its byte bound, keep a tag pointing at an evicted entry
// counted in a purge, or read Date.now().
import { LRUCache } from 'lru-cache';
import type { Clock } from '../../clock.ts';
import type { CacheSetOptions, CacheStore } from '../cache-store.ts';
import { ttlOf } from '../store-util.ts';

/**
 * What one entry costs in the heap beyond its body and key bytes, counted against the bound with
 * them (issue 31: counting body + key only, a 16 MiB bound held 120,000 small negative answers
 * while RSS reached 703 MiB). Measured by bench/cache-entry-overhead.ts (Node 20.20, 50,000
 * entries of a 404's shape, heapUsed + arrayBuffers after a full GC): 314 B for the lru-cache
 * node, its Buffer object and the Map slots; 814 B more for what lives beside an entry once it
 * was read: the response cache's decoded CacheEntry (a WeakMap on the Buffer) and the hit path's
 * prepared answer (head array and per-coding Map). 314 + 814 = 1,128, rounded up (the malloc
 * header of the entry's own allocation, see ownAllocation, is not in heapUsed).
 */
export const ENTRY_OVERHEAD_BYTES = 1_152;
/**
 * What one tag costs beyond its own bytes: the keyTags array slot, the tagKeys Set member and the
 * string's header. Measured as above: two tags (inn:<INN>, route:<route>) added 347 B per entry
 * including their 14 + 13 bytes of text, so (347 - 27) / 2 = 160, rounded up.
 */
export const TAG_OVERHEAD_BYTES = 192;

export class MemoryCache implements CacheStore {
  private readonly cache: LRUCache<string, Buffer>;
  private readonly keyTags = new Map<string, string[]>();
  private readonly tagKeys = new Map<string, Set<string>>();
  /** Body + key bytes of the entries held (cacheBytes, as every store reports it). */
  private held = 0;

  constructor(clock: Clock, cacheMaxBytes: number) {
    if (!Number.isSafeInteger(cacheMaxBytes) || cacheMaxBytes <= 0) {
      throw new RangeError(`cacheMaxBytes must be a positive integer, got ${cacheMaxBytes}`);
    }
    this.cache = new LRUCache<string, Buffer>({
      maxSize: cacheMaxBytes,
      // Every set passes its size (entrySize with its tags); this is the fallback lru-cache demands.
      sizeCalculation: (value, key) => entrySize(key, value, undefined),
      // TTLs follow the injected clock; resolution 0 = ask the clock on every check (no timers).
      perf: { now: () => clock.now() },
      ttlResolution: 0,
      dispose: (value, key) => {
        this.held -= value.length + Buffer.byteLength(key);
        this.unlinkTags(key);
      },
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
    const tags = options.tags?.length ? [...new Set(options.tags)] : undefined;
    this.unlinkTags(key);
    // An entry larger than the whole bound is not stored (and any old copy is gone).
    if (!this.put(key, value, { ttl, size: entrySize(key, value, tags) }) || !tags) return;
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
    const size = entrySize(key, value, tags);
    // dispose unlinks its tags
    if (!this.put(key, value, Number.isFinite(ttl) && ttl > 0 ? { ttl, size } : { size })) return false;
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

  /** Body + key bytes held, as every store counts them (the bound counts more: heapBytes). */
  async cacheBytes(): Promise<number> {
    this.cache.purgeStale();
    return this.held;
  }

  /** What the held entries are counted as against the bound (entrySize: bytes plus overheads). */
  heapBytes(): number {
    this.cache.purgeStale();
    return this.cache.calculatedSize;
  }

  /** Entries held (tests: the bound keeps the count down). */
  get size(): number {
    return this.cache.size;
  }

  /** lru-cache's set, counting `held`; false when the entry was too large to keep. */
  private put(key: string, given: Buffer, options: { ttl?: number; size: number }): boolean {
    const value = ownAllocation(given);
    // The same Buffer set again is no new entry: lru-cache disposes nothing, so nothing is added.
    const same = this.cache.peek(key, { allowStale: true }) === value;
    this.cache.set(key, value, options);
    if (!this.cache.has(key)) return false;
    if (!same) this.held += value.length + Buffer.byteLength(key);
    return true;
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

/**
 * The bytes in an allocation of their own. A small Buffer is usually a slice of one of Node's
 * shared 8 KiB pool slabs (Buffer.from, Buffer.concat, allocUnsafe under 4 KiB): kept in the
 * cache, it keeps the whole slab alive, whatever else was cut from it and long dropped, so a
 * 300-byte negative answer could hold 8 KiB. allocUnsafeSlow never takes from the pool.
 */
function ownAllocation(value: Buffer): Buffer {
  if (value.byteOffset === 0 && value.buffer.byteLength === value.length) return value;
  const own = Buffer.allocUnsafeSlow(value.length);
  value.copy(own);
  return own;
}

/** What an entry is counted as against the bound: its bytes, its key, its tags and their overheads. */
export function entrySize(key: string, value: Buffer, tags: readonly string[] | undefined): number {
  let size = value.length + Buffer.byteLength(key) + ENTRY_OVERHEAD_BYTES;
  for (const tag of tags ?? []) size += Buffer.byteLength(tag) + TAG_OVERHEAD_BYTES;
  return size;
}
