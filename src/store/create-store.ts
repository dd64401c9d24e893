// Picks the Store backend: Redis when a URL or cluster nodes are configured, the in-process memory store otherwise.
// With a PostgreSQL URL, the money roles (budgets, ledger, charges) live in PostgreSQL and the
// chosen store keeps the hot roles only (split-store.ts); call store.open() before serving.
// Must never: connect anywhere when neither is given, or hide which backend it chose (Store.kind).
import type { Clock } from '../clock.ts';
import { MemoryStore } from './memory/memory-store.ts';
import { PostgresMoney } from './postgres/postgres-money.ts';
import { RedisStore } from './redis/redis-store.ts';
import { SplitStore } from './split-store.ts';
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
  /** See MemoryStoreOptions.onError / RedisStoreOptions.onError. */
  onError?: (error: unknown) => void;
  /** postgres:// URL: money lives in PostgreSQL (postgres/), the hot roles in memory or Redis. */
  postgresUrl?: string;
  /** PostgreSQL pool bound per process (default 10). */
  postgresPoolMax?: number;
  /** PostgreSQL statement timeout in ms (default 5000). */
  postgresStatementTimeoutMs?: number;
}

export function createStore(options: CreateStoreOptions): Store {
  const hot = createHotStore(options);
  if (!options.postgresUrl) return hot;
  const money = new PostgresMoney({
    url: options.postgresUrl,
    ...(options.postgresPoolMax ? { poolMax: options.postgresPoolMax } : {}),
    ...(options.postgresStatementTimeoutMs ? { statementTimeoutMs: options.postgresStatementTimeoutMs } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
  });
  return new SplitStore(hot, money);
}

function createHotStore(options: CreateStoreOptions): Store {
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
  return new MemoryStore({ clock, cacheMaxBytes, ...(onError ? { onError } : {}) });
}
