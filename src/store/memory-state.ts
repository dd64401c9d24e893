// The memory store's budget book and limiter logs: the same decisions the Redis Lua scripts in
// redis-scripts.ts make, against the injected clock. The contract suite holds the two equal.
//
// Must never: read Date.now(), partially apply a reservation or a take (all counters/classes or
// none), or let a hold outlive holdMs.
import type { Clock } from '../clock.ts';
import type {
  CounterState,
  LimitClassSpec,
  LimitClassState,
  ReserveRequest,
  ReserveResult,
  TakeResult,
} from './store.ts';
import { limitClasses, minorOf, ttlOf, uniqueCounters, uniqueStrings } from './store-util.ts';

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

interface Slot {
  id: string;
  at: number;
}

/** One class's slots, oldest first, with their ids for O(1) membership. */
interface SlotLog {
  slots: Slot[];
  ids: Set<string>;
}

export class MemorySlots {
  private readonly logs = new Map<string, SlotLog>();
  private readonly windows = new Map<string, number>();
  private readonly pauses = new Map<string, number>();
  constructor(private readonly clock: Clock) {}

  take(classes: LimitClassSpec[], id: string): TakeResult {
    const specs = limitClasses(classes);
    const now = this.clock.now();
    let refusal: { name: string; retryAfterMs: number } | null = null;
    for (const spec of specs) {
      const { slots, ids } = this.prune(spec, now);
      let wait = this.pausedFor(spec.name, now);
      if (slots.length >= spec.limit && !ids.has(id)) {
        // A slot frees when the entry that brings `used` below `limit` leaves the window.
        const freeing = slots[slots.length - spec.limit];
        wait = Math.max(wait, freeing ? freeing.at + spec.windowMs - now : spec.windowMs);
      }
      if (wait > 0 && (!refusal || wait > refusal.retryAfterMs)) {
        refusal = { name: spec.name, retryAfterMs: wait };
      }
    }
    if (refusal) return { ok: false, ...refusal };
    for (const spec of specs) {
      let log = this.logs.get(spec.name);
      if (!log) {
        log = { slots: [], ids: new Set() };
        this.logs.set(spec.name, log);
      }
      if (log.ids.has(id)) log.slots = log.slots.filter((s) => s.id !== id);
      log.ids.add(id);
      // Keep time order even if the clock was set back.
      let at = log.slots.length;
      while (at > 0 && log.slots[at - 1]!.at > now) at--;
      log.slots.splice(at, 0, { id, at: now });
      this.windows.set(spec.name, spec.windowMs);
    }
    return { ok: true };
  }

  giveBack(classNames: string[], id: string): void {
    for (const name of classNames) {
      const log = this.logs.get(name);
      if (!log?.ids.delete(id)) continue;
      log.slots = log.slots.filter((s) => s.id !== id);
    }
  }

  pause(name: string, durationMs: number): void {
    const until = this.clock.now() + durationMs;
    if ((this.pauses.get(name) ?? 0) < until) this.pauses.set(name, until);
  }

  state(classes: LimitClassSpec[]): LimitClassState[] {
    const now = this.clock.now();
    return classes.map((spec) => ({
      name: spec.name,
      used: this.prune(spec, now).slots.length,
      pausedForMs: this.pausedFor(spec.name, now),
    }));
  }

  sweep(): void {
    const now = this.clock.now();
    for (const [name, windowMs] of this.windows) {
      if (this.prune({ name, limit: 0, windowMs }, now).slots.length === 0) {
        this.logs.delete(name);
        this.windows.delete(name);
      }
    }
    for (const [name, until] of this.pauses) if (until <= now) this.pauses.delete(name);
  }

  /** Drops slots taken at or before now - windowMs; returns what is left. */
  private prune(spec: LimitClassSpec, now: number): SlotLog {
    const log = this.logs.get(spec.name);
    if (!log) return { slots: [], ids: new Set() };
    const cutoff = now - spec.windowMs;
    let drop = 0;
    while (drop < log.slots.length && log.slots[drop]!.at <= cutoff) log.ids.delete(log.slots[drop++]!.id);
    if (drop > 0) log.slots.splice(0, drop);
    return log;
  }

  private pausedFor(name: string, now: number): number {
    return Math.max(0, (this.pauses.get(name) ?? 0) - now);
  }
}
