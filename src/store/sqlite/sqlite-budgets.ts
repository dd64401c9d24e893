// The embedded money database's budget book: the decisions of memory/memory-budgets.ts (the
// reference; the contract suite holds them equal) over the counters and holds tables, against
// the injected clock. Book methods run inside a transaction their caller opened (the budget role
// below, or the money role's record step), so a reservation is all counters or none.
//
// Must never: read Date.now(), partially apply a reservation, or let a hold outlive holdMs.
import type { Clock } from '../../clock.ts';
import type { BudgetStore, CounterState, ReserveRequest, ReserveResult } from '../budget-store.ts';
import type { WriteCounter } from '../memory/write-counter.ts';
import { minorOf, ttlOf, uniqueCounters, uniqueStrings } from '../store-util.ts';
import type { MoneyDb } from './sqlite-db.ts';

interface Live {
  spent: number;
  held: number;
}

export class SqliteBudgets {
  constructor(
    private readonly db: MoneyDb,
    private readonly clock: Clock,
  ) {}

  /** Inside a transaction. */
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
      const mine = this.holdOf(spec.key, request.id, now) ?? 0;
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
      if (amount === 0 && (!this.find(spec.key, now) || this.holdOf(spec.key, request.id, now) === null)) {
        continue;
      }
      this.findOrCreate(spec.key, now);
      this.db.run(
        `INSERT INTO holds (counter, id, amount, expires_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (counter, id) DO UPDATE SET amount = excluded.amount, expires_at = excluded.expires_at`,
        [spec.key, request.id, amount, now + holdMs],
      );
      this.db.run('UPDATE counters SET expires_at = ? WHERE key = ?', [
        now + Math.ceil(spec.ttlMs),
        spec.key,
      ]);
    }
    return { ok: true };
  }

  /** Inside a transaction. Settles hold `id` (or, with id null, adds spend without a hold). */
  settle(id: string | null, keys: string[], amount: number, ttl: number): void {
    const now = this.clock.now();
    for (const key of uniqueStrings(keys)) {
      this.findOrCreate(key, now);
      if (id !== null) this.db.run('DELETE FROM holds WHERE counter = ? AND id = ?', [key, id]);
      this.db.run('UPDATE counters SET spent = spent + ?, expires_at = ? WHERE key = ?', [
        amount,
        now + ttl,
        key,
      ]);
    }
  }

  /** Inside a transaction. */
  release(id: string, keys: string[]): void {
    for (const key of uniqueStrings(keys))
      this.db.run('DELETE FROM holds WHERE counter = ? AND id = ?', [key, id]);
  }

  read(keys: string[]): CounterState[] {
    const now = this.clock.now();
    return keys.map((key) => {
      const c = this.find(key, now);
      return { key, spentMinor: c?.spent ?? 0, reservedMinor: c?.held ?? 0 };
    });
  }

  /** Drops expired counters (with their holds) and expired holds. Inside a transaction. */
  sweep(): void {
    const now = this.clock.now();
    this.db.run(
      'DELETE FROM holds WHERE expires_at <= ? OR counter IN (SELECT key FROM counters WHERE expires_at <= ?)',
      [now, now],
    );
    this.db.run('DELETE FROM counters WHERE expires_at <= ?', [now]);
  }

  /** The live counter: its spend and the sum of its live holds; undefined when absent or expired. */
  private find(key: string, now: number): Live | undefined {
    const row = this.db.get(
      `SELECT c.spent AS spent,
              (SELECT COALESCE(SUM(h.amount), 0) FROM holds h WHERE h.counter = c.key AND h.expires_at > ?) AS held
         FROM counters c WHERE c.key = ? AND c.expires_at > ?`,
      [now, key, now],
    );
    return row ? { spent: Number(row.spent), held: Number(row.held) } : undefined;
  }

  private holdOf(key: string, id: string, now: number): number | null {
    const row = this.db.get('SELECT amount FROM holds WHERE counter = ? AND id = ? AND expires_at > ?', [
      key,
      id,
      now,
    ]);
    return row ? Number(row.amount) : null;
  }

  /** The live counter, made anew (spend 0, no holds) when absent or expired. */
  private findOrCreate(key: string, now: number): void {
    if (this.find(key, now)) return;
    this.db.run('DELETE FROM holds WHERE counter = ?', [key]);
    this.db.run(
      `INSERT INTO counters (key, spent, expires_at) VALUES (?, 0, ?)
       ON CONFLICT (key) DO UPDATE SET spent = 0, expires_at = excluded.expires_at`,
      [key, now],
    );
  }
}

/** The budget role over a SqliteBudgets book: each call one durable transaction. */
export class SqliteBudgetStore implements BudgetStore {
  constructor(
    private readonly db: MoneyDb,
    private readonly book: SqliteBudgets,
    private readonly writes: WriteCounter,
  ) {}

  async reserve(request: ReserveRequest): Promise<ReserveResult> {
    const result = this.db.tx(() => this.book.reserve(request));
    this.writes.wrote();
    return result;
  }

  async settle(id: string, counterKeys: string[], actualMinor: number, ttlMs: number): Promise<void> {
    const amount = minorOf(actualMinor, 'actualMinor');
    const ttl = ttlOf(ttlMs);
    this.db.tx(() => this.book.settle(id, counterKeys, amount, ttl));
    this.writes.wrote();
  }

  async release(id: string, counterKeys: string[]): Promise<void> {
    this.db.tx(() => this.book.release(id, counterKeys));
    this.writes.wrote();
  }

  async addSpend(counterKeys: string[], amountMinor: number, ttlMs: number): Promise<void> {
    const amount = minorOf(amountMinor);
    const ttl = ttlOf(ttlMs);
    this.db.tx(() => this.book.settle(null, counterKeys, amount, ttl));
    this.writes.wrote();
  }

  async readCounters(keys: string[]): Promise<CounterState[]> {
    return this.book.read(keys);
  }
}
