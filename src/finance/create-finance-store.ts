// Picks the FinanceStore backend the way create-store.ts picks the Store: Redis (same URL or
// cluster nodes, same prefix) when the store is shared, this process's memory otherwise.
//
// Must never: give replicas on a shared store a memory FinanceStore (caps would differ per replica).

import type { FinanceStore } from './finance-store.ts';
import { MemoryFinanceStore } from './memory-finance-store.ts';
import { RedisFinanceStore } from './redis-finance-store.ts';

export interface CreateFinanceStoreOptions {
  redisUrl?: string | null;
  redisClusterNodes?: string[];
  prefix?: string;
  onError?: (error: unknown) => void;
}

export function createFinanceStore(options: CreateFinanceStoreOptions): FinanceStore {
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
