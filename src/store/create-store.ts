// Picks the Store backend. Money (budgets, ledger, charges): PostgreSQL when a URL is given (the
// system of record for any number of replicas: split-store.ts; call store.open() before serving);
// else Redis with the hot roles; else, without Redis, the embedded database <stateDir>/money.db
// (one process; sqlite/embedded-store.ts), or, with stateDir null (unit tests), memory. Hot roles
// (cache, state, slots, bus): Redis when a URL or cluster nodes are configured, memory otherwise.
// Must never: connect anywhere when nothing is given, or hide which backend it chose (Store.kind).
import type { Clock } from '../clock.ts';
import { MemoryStore } from './memory/memory-store.ts';
import { PostgresMoney } from './postgres/postgres-money.ts';
import { RedisStore } from './redis/redis-store.ts';
import { SplitStore } from './split-store.ts';
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
  /**
   * Without Redis and PostgreSQL: the directory of the money database (sqlite/embedded-store.ts);
   * null or absent = money in memory.
   */
  stateDir?: string | null;
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
  if (!options.postgresUrl) return createHotStore(options, true);
  const money = new PostgresMoney({
    url: options.postgresUrl,
    ...(options.postgresPoolMax ? { poolMax: options.postgresPoolMax } : {}),
    ...(options.postgresStatementTimeoutMs ? { statementTimeoutMs: options.postgresStatementTimeoutMs } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
  });
  return new SplitStore(createHotStore(options, false), money);
}

/** `embeddedMoney`: without Redis, keep money in <stateDir>/money.db (not when PostgreSQL has it). */
function createHotStore(options: CreateStoreOptions, embeddedMoney: boolean): Store {
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
  if (embeddedMoney && options.stateDir) {
    return new EmbeddedStore({
      clock,
      cacheMaxBytes,
      stateDir: options.stateDir,
      ...(onError ? { onError } : {}),
    });
  }
  return new MemoryStore({ clock, cacheMaxBytes, ...(onError ? { onError } : {}) });
}
