// Picks the FinanceStore backend from the money backend, so budget overrides and the audit trail
// live where money lives and survive what money survives:
//   money on PostgreSQL (SplitStore over PostgresMoney)  -> PostgreSQL, on the money store's pool
//   money in the embedded <stateDir>/money.db (EmbeddedStore) -> the same SQLite file and handle
//   money on Redis (a shared store)                       -> Redis (same URL or cluster nodes, prefix)
//   money in memory (unit tests, stateDir null)           -> this process's memory
// A store given without its money backend known (`money` absent) falls back to the Redis /
// memory choice of the options, as before.
//
// Must never: give replicas on a shared store a memory FinanceStore (caps would differ per
// replica), or put finance anywhere weaker than money (memory beside a durable money store).

import { PostgresMoney } from '../store/postgres/postgres-money.ts';
import { SplitStore } from '../store/split-store.ts';
import { EmbeddedStore } from '../store/sqlite/embedded-store.ts';
import type { Store } from '../store/store.ts';
import type { FinanceStore } from './finance-store.ts';
import { MemoryFinanceStore } from './memory-finance-store.ts';
import { PgFinanceStore } from './pg-finance-store.ts';
import { RedisFinanceStore } from './redis-finance-store.ts';
import { SqliteFinanceStore } from './sqlite-finance-store.ts';

export interface CreateFinanceStoreOptions {
  /** The Store money lives in (createStore's answer): decides the backend when durable. */
  money?: Store;
  redisUrl?: string | null;
  redisClusterNodes?: string[];
  prefix?: string;
  onError?: (error: unknown) => void;
}

export function createFinanceStore(options: CreateFinanceStoreOptions): FinanceStore {
  const { money } = options;
  if (money instanceof SplitStore && money.money instanceof PostgresMoney)
    return new PgFinanceStore({ link: money.money.link });
  if (money instanceof EmbeddedStore) return new SqliteFinanceStore(money.moneyDb);
  const nodes = options.redisClusterNodes ?? [];
  if (options.redisUrl || nodes.length > 0) {
    return new RedisFinanceStore({
      target: nodes.length > 0 ? { clusterNodes: nodes } : { url: options.redisUrl! },
      ...(options.prefix ? { prefix: options.prefix } : {}),
      ...(options.onError ? { onError: options.onError } : {}),
    });
  }
  return new MemoryFinanceStore();
}
