// The embedded default Store (one process, no Redis, no PostgreSQL): the hot roles (cache, state
// and locks, limiter slots, bus) in process memory as in memory/memory-store.ts, and the money
// roles (budgets, ledger, charges) in <stateDir>/money.db (sqlite-db.ts), so a restart or a
// kill -9 loses no charge, no pending entry and no day's spend. Its kind is 'memory': every role
// lives in this one process, nothing is shared with another replica.
//
// Must never: open a money file another running process owns, or keep the file open after close().
import type { Clock } from '../../clock.ts';
import { ComposedStore } from '../composed-store.ts';
import { MemoryBus } from '../memory/memory-bus.ts';
import { MemoryCache } from '../memory/memory-cache.ts';
import { MemorySlotStore, MemorySlots } from '../memory/memory-slots.ts';
import { MemoryState } from '../memory/memory-state.ts';
import { WriteCounter } from '../memory/write-counter.ts';
import { SqliteBudgetStore, SqliteBudgets } from './sqlite-budgets.ts';
import { SqliteCharges } from './sqlite-charges.ts';
import { MoneyDb } from './sqlite-db.ts';
import { SqliteLedger } from './sqlite-ledger.ts';

export interface EmbeddedStoreOptions {
  clock: Clock;
  /** Upper bound of the in-memory cache: body bytes + key bytes of every entry. */
  cacheMaxBytes: number;
  /** Directory of money.db (created when absent); one process owns it at a time. */
  stateDir: string;
  /** Called when a subscriber's handler throws. Default: process.emitWarning. */
  onError?: (error: unknown) => void;
}

function parts(options: EmbeddedStoreOptions) {
  const { clock } = options;
  const db = new MoneyDb(options.stateDir);
  const writes = new WriteCounter();
  const book = new SqliteBudgets(db, clock);
  const ledger = new SqliteLedger(db);
  const charges = new SqliteCharges(db, clock, book, ledger, writes);
  const state = new MemoryState(clock, writes);
  const logs = new MemorySlots(clock);
  for (const part of [state, logs]) writes.add(part);
  writes.add({
    // Runs after a committed step: a failing sweep must not turn that step into an error (the
    // caller would redo it); expired rows are only space, and the next sweep retries.
    sweep: () => {
      try {
        db.tx(() => {
          book.sweep();
          charges.sweep();
        });
      } catch {}
    },
  });
  const onError = options.onError ?? ((e) => process.emitWarning(e instanceof Error ? e : String(e)));
  return {
    db,
    cache: new MemoryCache(clock, options.cacheMaxBytes),
    state,
    budgets: new SqliteBudgetStore(db, book, writes),
    slots: new MemorySlotStore(logs, writes),
    ledger,
    bus: new MemoryBus(onError),
    charges,
  };
}

export class EmbeddedStore extends ComposedStore {
  override readonly kind = 'memory' as const;
  private readonly parts: ReturnType<typeof parts>;

  constructor(options: EmbeddedStoreOptions) {
    const roles = parts(options);
    super(roles);
    this.parts = roles;
  }

  /** The money database itself (finance/sqlite-finance-store.ts keeps its tables in it). */
  get moneyDb(): MoneyDb {
    return this.parts.db;
  }

  /** Where the money roles live (absolute path of money.db). */
  get moneyFile(): string {
    return this.parts.db.path;
  }

  override cachePeek(key: string): Buffer | null {
    return this.parts.cache.peek(key);
  }

  override async ping(): Promise<void> {
    this.parts.db.ping();
  }

  override async close(): Promise<void> {
    this.parts.bus.close();
    this.parts.db.close();
  }
}
