// Picks the Store backend: Redis when a URL or cluster nodes are configured; otherwise the embedded
// store (memory hot roles, money in <stateDir>/money.db) when a state directory is given, and the
// pure in-process memory store when it is not (stateDir null: unit tests).
// Must never: connect anywhere when neither is given, or hide which backend it chose (Store.kind).
import type { Clock } from '../clock.ts';
import { MemoryStore } from './memory/memory-store.ts';
import { RedisStore } from './redis/redis-store.ts';
import { EmbeddedStore } from './sqlite/embedded-store.ts';
import type { Store } from './store.ts';

export interface CreateStoreOptions {
  /** redis:// or rediss:// URL; absent or empty (and no cluster nodes) = memory store. */
  redisUrl?: string;
  /** A Redis Cluster's startup nodes (host:port); when given, used instead of redisUrl. */
  redisClusterNodes?: string[];
  /** Redis key prefix; default "cpgw:". */
  prefix?: string;
  clock: Clock;
  /** Memory: the cache's byte bound. Redis: the largest single entry stored. */
  cacheMaxBytes: number;
  /** Redis only: bytes of the in-process tier in front of the shared cache; 0 = none. */
  localCacheBytes?: number;
  /** Without Redis: the directory of the money database (sqlite/embedded-store.ts); null or absent = money in memory. */
  stateDir?: string | null;
  /** See MemoryStoreOptions.onError / RedisStoreOptions.onError. */
  onError?: (error: unknown) => void;
}

export function createStore(options: CreateStoreOptions): Store {
  const { redisUrl, prefix, clock, cacheMaxBytes, onError } = options;
  const clusterNodes = options.redisClusterNodes ?? [];
  if (redisUrl || clusterNodes.length > 0) {
    return new RedisStore({
      ...(clusterNodes.length > 0 ? { clusterNodes } : { url: redisUrl }),
      clock,
      cacheMaxBytes,
      localCacheBytes: options.localCacheBytes ?? 0,
      ...(prefix ? { prefix } : {}),
      ...(onError ? { onError } : {}),
    });
  }
  if (options.stateDir) {
    return new EmbeddedStore({
      clock,
      cacheMaxBytes,
      stateDir: options.stateDir,
      ...(onError ? { onError } : {}),
    });
  }
  return new MemoryStore({ clock, cacheMaxBytes, ...(onError ? { onError } : {}) });
}
