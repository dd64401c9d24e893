// The memory store's budget book: the same decisions the Redis Lua scripts in redis/scripts.ts
// make, against the injected clock, and the budget role on top of it. The contract suite holds
// the two backends equal. The money role (memory-charges.ts) uses the same book synchronously.
//
// Must never: read Date.now(), partially apply a reservation (all counters or none), or let a
// hold outlive holdMs.
import type { Clock } from '../../clock.ts';
import type { BudgetStore, CounterState, ReserveRequest, ReserveResult } from '../budget-store.ts';
import { minorOf, ttlOf, uniqueCounters, uniqueStrings } from '../store-util.ts';
import type { WriteCounter } from './write-counter.ts';

interface Hold {
  amount: number;
  expiresAt: number;
}

interface Counter {
  spent: number;
  held: number;
  holds: Map<string, Hold>;
  expiresAt: number;
}

export class MemoryBudgets {
  private readonly counters = new Map<string, Counter>();
  constructor(private readonly clock: Clock) {}

  reserve(request: ReserveRequest): ReserveResult {
    const amount = minorOf(request.amountMinor);
    const holdMs = ttlOf(request.holdMs, 'holdMs');
    const specs = uniqueCounters(request.counters);
    for (const spec of specs) ttlOf(spec.ttlMs);
    const now = this.clock.now();
    for (const spec of specs) {
      const c = this.find(spec.key, now);
      if (spec.limitMinor === null || !c) {
        if (spec.limitMinor !== null && amount > spec.limitMinor) {
          return { ok: false, key: spec.key, limitMinor: spec.limitMinor, spentMinor: 0, reservedMinor: 0 };
        }
        continue;
      }
      const mine = c.holds.get(request.id)?.amount ?? 0;
      if (c.spent + c.held - mine + amount > spec.limitMinor) {
        return {
          ok: false,
          key: spec.key,
          limitMinor: spec.limitMinor,
          spentMinor: c.spent,
          reservedMinor: c.held,
        };
      }
    }
    for (const spec of specs) {
      // A hold of 0 with none before it (a read an open window covers) changes no counter.
      if (amount === 0 && !this.find(spec.key, now)?.holds.has(request.id)) continue;
      const c = this.findOrCreate(spec.key, now);
      c.held += amount - (c.holds.get(request.id)?.amount ?? 0);
      c.holds.set(request.id, { amount, expiresAt: now + holdMs });
      c.expiresAt = now + Math.ceil(spec.ttlMs);
    }
    return { ok: true };
  }

  /** Settles hold `id` (or, with id null, adds spend without a hold). */
  settle(id: string | null, keys: string[], amount: number, ttl: number): void {
    const now = this.clock.now();
    for (const key of uniqueStrings(keys)) {
      const c = this.findOrCreate(key, now);
      if (id !== null) this.dropHold(c, id);
      c.spent += amount;
      c.expiresAt = now + ttl;
    }
  }

  release(id: string, keys: string[]): void {
    const now = this.clock.now();
    for (const key of uniqueStrings(keys)) {
      const c = this.find(key, now);
      if (c) this.dropHold(c, id);
    }
  }

  read(keys: string[]): CounterState[] {
    const now = this.clock.now();
    return keys.map((key) => {
      const c = this.find(key, now);
      return { key, spentMinor: c?.spent ?? 0, reservedMinor: c?.held ?? 0 };
    });
  }

  sweep(): void {
    const now = this.clock.now();
    for (const [key, c] of this.counters) if (c.expiresAt <= now) this.counters.delete(key);
  }

  /** The live counter with its expired holds dropped, or undefined. */
  private find(key: string, now: number): Counter | undefined {
    const c = this.counters.get(key);
    if (!c) return undefined;
    if (c.expiresAt <= now) {
      this.counters.delete(key);
      return undefined;
    }
    for (const [id, hold] of c.holds) {
      if (hold.expiresAt <= now) {
        c.holds.delete(id);
        c.held -= hold.amount;
      }
    }
    return c;
  }

  private findOrCreate(key: string, now: number): Counter {
    let c = this.find(key, now);
    if (!c) {
      c = { spent: 0, held: 0, holds: new Map(), expiresAt: now };
      this.counters.set(key, c);
    }
    return c;
  }

  private dropHold(c: Counter, id: string): void {
    const hold = c.holds.get(id);
    if (!hold) return;
    c.holds.delete(id);
    c.held -= hold.amount;
  }
}

/** The budget role over a MemoryBudgets book. */
export class MemoryBudgetStore implements BudgetStore {
  constructor(
    private readonly book: MemoryBudgets,
    private readonly writes: WriteCounter,
  ) {}

  async reserve(request: ReserveRequest): Promise<ReserveResult> {
    const result = this.book.reserve(request);
    this.writes.wrote();
    return result;
  }

  async settle(id: string, counterKeys: string[], actualMinor: number, ttlMs: number): Promise<void> {
    this.book.settle(id, counterKeys, minorOf(actualMinor, 'actualMinor'), ttlOf(ttlMs));
  }

  async release(id: string, counterKeys: string[]): Promise<void> {
    this.book.release(id, counterKeys);
  }

  async addSpend(counterKeys: string[], amountMinor: number, ttlMs: number): Promise<void> {
    this.book.settle(null, counterKeys, minorOf(amountMinor), ttlOf(ttlMs));
    this.writes.wrote();
  }

  async readCounters(keys: string[]): Promise<CounterState[]> {
    return this.book.read(keys);
  }
}
