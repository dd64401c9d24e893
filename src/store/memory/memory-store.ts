// The embedded Store: one process, no Redis. Cache entries live in an lru-cache bounded by what
// they cost in the heap (memory-cache.ts); every other role lives in plain Maps that cache pressure can never evict.
// The budget book and the ledger are shared by the budget, ledger and money roles. All time
// comes from the injected clock.
//
// Must never: call Date.now(), let the cache grow past cacheMaxBytes, evict state before its TTL,
// or deliver a published message synchronously (Redis never does; callers must not rely on it).
import type { Clock } from '../../clock.ts';
import { ComposedStore } from '../composed-store.ts';
import { MemoryBudgetStore, MemoryBudgets } from './memory-budgets.ts';
import { MemoryBus } from './memory-bus.ts';
import { MemoryCache } from './memory-cache.ts';
import { MemoryCharges } from './memory-charges.ts';
import { MemoryLedger } from './memory-ledger.ts';
import { MemorySlotStore, MemorySlots } from './memory-slots.ts';
import { MemoryState } from './memory-state.ts';
import { WriteCounter } from './write-counter.ts';

export interface MemoryStoreOptions {
  clock: Clock;
  /** Upper bound of the cache: what its entries cost in the heap (memory-cache.ts entrySize). */
  cacheMaxBytes: number;
  /** Ledger records kept; the oldest are dropped beyond this (counted in ledgerDropped). Default 100,000. */
  ledgerMaxRecords?: number;
  /** Called when a subscriber's handler throws. Default: process.emitWarning. */
  onError?: (error: unknown) => void;
}

interface Parts {
  cache: MemoryCache;
  ledger: MemoryLedger;
  state: MemoryState;
  bus: MemoryBus;
}

function parts(options: MemoryStoreOptions) {
  const { clock } = options;
  const writes = new WriteCounter();
  const book = new MemoryBudgets(clock);
  const logs = new MemorySlots(clock);
  const ledger = new MemoryLedger(options.ledgerMaxRecords ?? 100_000);
  const state = new MemoryState(clock, writes);
  const charges = new MemoryCharges(clock, book, ledger, writes);
  for (const part of [state, book, logs, charges]) writes.add(part);
  const onError = options.onError ?? ((e) => process.emitWarning(e instanceof Error ? e : String(e)));
  return {
    cache: new MemoryCache(clock, options.cacheMaxBytes),
    state,
    budgets: new MemoryBudgetStore(book, writes),
    slots: new MemorySlotStore(logs, writes),
    ledger,
    bus: new MemoryBus(onError),
    charges,
  };
}

export class MemoryStore extends ComposedStore {
  override readonly kind = 'memory' as const;
  private readonly parts: Parts;

  constructor(options: MemoryStoreOptions) {
    const roles = parts(options);
    super(roles);
    this.parts = roles;
  }

  /** Ledger records dropped because the ledger exceeded ledgerMaxRecords. */
  get ledgerDropped(): number {
    return this.parts.ledger.dropped;
  }

  /** State keys currently held (expired ones included until swept). */
  get stateListedSize(): number {
    return this.parts.state.listedSize;
  }

  get stateSize(): number {
    return this.parts.state.size;
  }

  override cachePeek(key: string): Buffer | null {
    return this.parts.cache.peek(key);
  }

  override async ping(): Promise<void> {}

  override async close(): Promise<void> {
    this.parts.bus.close();
  }
}
