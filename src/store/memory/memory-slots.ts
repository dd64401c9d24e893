// The memory store's limiter logs: the same sliding-window decisions the Redis Lua scripts in
// redis/slot-scripts.ts make, against the injected clock (a LocalSlotLog, slot-store.ts), and the
// slot role on top of them.
//
// Must never: read Date.now(), or partially apply a take (all classes or none).
import type { Clock } from '../../clock.ts';
import type { LimitClassSpec, LimitClassState, LocalSlotLog, SlotStore, TakeResult } from '../slot-store.ts';
import { isNoPause, limitClasses, ttlOf } from '../store-util.ts';
import type { WriteCounter } from './write-counter.ts';

interface Slot {
  id: string;
  at: number;
}

/** One class's slots, oldest first, with their ids for O(1) membership. */
interface SlotLog {
  slots: Slot[];
  ids: Set<string>;
}

export class MemorySlots implements LocalSlotLog {
  private readonly logs = new Map<string, SlotLog>();
  private readonly windows = new Map<string, number>();
  private readonly pauses = new Map<string, number>();
  constructor(private readonly clock: Pick<Clock, 'now'>) {}

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

/** The slot role over MemorySlots logs. */
export class MemorySlotStore implements SlotStore {
  constructor(
    private readonly logs: MemorySlots,
    private readonly writes: WriteCounter,
  ) {}

  async takeSlots(classes: LimitClassSpec[], id: string, read?: LimitClassSpec[]): Promise<TakeResult> {
    const result = this.logs.take(classes, id);
    this.writes.wrote();
    if (!result.ok || !read) return result;
    return { ok: true, states: this.logs.state([...limitClasses(classes), ...read]) };
  }

  async returnSlots(classNames: string[], id: string): Promise<void> {
    this.logs.giveBack(classNames, id);
  }

  async pauseClass(name: string, durationMs: number): Promise<void> {
    if (isNoPause(durationMs)) return;
    this.logs.pause(name, ttlOf(durationMs, 'durationMs'));
  }

  async limiterState(classes: LimitClassSpec[]): Promise<LimitClassState[]> {
    return this.logs.state(classes);
  }
}
