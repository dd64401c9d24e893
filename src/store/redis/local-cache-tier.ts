// The in-process tier in front of the Redis cache role (issues #10 and #12): hot entries are served
// from this process's memory (a byte-bounded lru-cache on the injected clock, memory-cache.ts), so
// a Redis HIT is usually a memory HIT, and a cached read this tier can serve keeps working while
// Redis is down. Each entry is kept no longer than its own TTL (what Redis says is left of it).
// Purges and deletes go to every replica over the bus: this tier drops the keys Redis's tag set
// named, plus what its own tag index knows (entries set through this replica), and a read that
// raced with a purge is not kept. After a lost Redis connection comes back the whole tier is
// dropped (purges published while it was away were missed).
//
// Must never: serve an entry past its TTL, keep an entry another replica purged once the purge
// message arrived, or count its own bytes as the shared cache's (cacheBytes is Redis's).
import type { Clock } from '../../clock.ts';
import type { BusStore } from '../bus-store.ts';
import type { CacheSetOptions, CacheStore } from '../cache-store.ts';
import { MemoryCache } from '../memory/memory-cache.ts';
import type { RedisCache } from './redis-cache.ts';

export const PURGE_CHANNEL = 'cache:purge';

interface PurgeMessage {
  keys: string[];
  tag?: string;
}

export class LocalCacheTier implements CacheStore {
  private local: MemoryCache;
  /** Bumped by every purge seen; a read started before a purge is not kept locally. */
  private generation = 0;
  private readonly unsubscribe: Promise<(() => Promise<void>) | null>;

  constructor(
    private readonly remote: RedisCache,
    private readonly bus: BusStore,
    private readonly clock: Clock,
    private readonly maxBytes: number,
    onError: (error: unknown) => void,
  ) {
    this.local = new MemoryCache(clock, maxBytes);
    this.unsubscribe = bus
      .subscribe(PURGE_CHANNEL, (raw) => this.onPurge(JSON.parse(raw) as PurgeMessage))
      .catch((error: unknown) => {
        onError(error);
        return null;
      });
  }

  async cacheGet(key: string): Promise<Buffer | null> {
    const hit = await this.local.cacheGet(key);
    if (hit) return hit;
    const started = this.generation;
    const found = await this.remote.cacheGetWithTtl(key);
    if (!found) return null;
    if (started === this.generation && found.ttlMs > 0) {
      await this.local.cacheSet(key, found.value, { ttlMs: found.ttlMs });
    }
    return found.value;
  }

  /** What this tier holds, and Redis for the rest (not kept here: a batch read is no hot read). */
  async cacheGetMany(keys: readonly string[]): Promise<Array<Buffer | null>> {
    const found = await this.local.cacheGetMany(keys);
    const missing = keys.filter((_, i) => found[i] === null);
    if (missing.length === 0) return found;
    const remote = await this.remote.cacheGetMany(missing);
    let j = 0;
    return found.map((hit) => hit ?? remote[j++] ?? null);
  }

  /** What this tier holds for `key`, without waiting and without asking Redis (the hit path). */
  peek(key: string): Buffer | null {
    return this.local.peek(key);
  }

  async cacheSet(key: string, value: Buffer, options: CacheSetOptions): Promise<void> {
    // Here first: a read on this replica while Redis writes finds the new entry, not a miss that
    // asks Redis (a pass-through's entry is written just after its answer, and the next read of
    // the same key often comes within that round trip). A failed write leaves neither copy here.
    const generation = this.generation;
    await this.local.cacheSet(key, value, options);
    try {
      await this.remote.cacheSet(key, value, options);
    } catch (error) {
      await this.local.cacheDelete(key);
      throw error;
    }
    // Purged meanwhile (the purge may have reached Redis before this write): not kept here.
    if (generation !== this.generation) await this.local.cacheDelete(key);
  }

  async cacheReplace(key: string, expect: Buffer, value: Buffer): Promise<boolean> {
    const started = this.generation;
    const replaced = await this.remote.cacheReplace(key, expect, value);
    // Other replicas' tiers keep the copy they hold: the same answer, in another coding.
    if (replaced && started === this.generation) await this.local.cacheReplace(key, expect, value);
    else await this.local.cacheDelete(key);
    return replaced;
  }

  async cacheDelete(key: string): Promise<void> {
    this.onPurge({ keys: [key] });
    await this.remote.cacheDelete(key);
    await this.broadcast({ keys: [key] });
  }

  async cachePurgeTag(tag: string): Promise<number> {
    this.onPurge({ keys: [], tag });
    const { purged, keys } = await this.remote.purgeTagKeys(tag);
    await this.broadcast({ keys, tag });
    return purged;
  }

  async cacheBytes(): Promise<number> {
    return this.remote.cacheBytes();
  }

  /** Bytes held by this process's tier (for stats and tests). */
  localBytes(): Promise<number> {
    return this.local.cacheBytes();
  }

  /** Drops every local entry (after a reconnect: purges may have been missed). */
  clear(): void {
    this.generation++;
    this.local = new MemoryCache(this.clock, this.maxBytes);
  }

  async close(): Promise<void> {
    const off = await this.unsubscribe;
    await off?.().catch(() => {});
  }

  private onPurge(message: PurgeMessage): void {
    this.generation++;
    for (const key of message.keys) void this.local.cacheDelete(key);
    if (message.tag) void this.local.cachePurgeTag(message.tag);
  }

  private async broadcast(message: PurgeMessage): Promise<void> {
    await this.bus.publish(PURGE_CHANNEL, JSON.stringify(message));
  }
}
