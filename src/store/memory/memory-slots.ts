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

/**
 * One class's slots, oldest first, with their ids for O(1) membership. The live slots are
 * `slots[head..]`: a slot leaving the window moves `head` on instead of shifting the array (a
 * class with a high limit holds tens of thousands of slots, and every take drops the oldest).
 */
interface SlotLog {
  slots: Slot[];
  head: number;
  ids: Set<string>;
}

/** The live slots of a log (a copy only when slots before head are still held). */
function live(log: SlotLog): Slot[] {
  if (log.head > 0) {
    log.slots = log.slots.slice(log.head);
    log.head = 0;
  }
  return log.slots;
}

/** How many slots of a log are in its window (after prune). */
const count = (log: SlotLog): number => log.slots.length - log.head;

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
      const log = this.prune(spec, now);
      const { slots, ids } = log;
      let wait = this.pausedFor(spec.name, now);
      if (count(log) >= spec.limit && !ids.has(id)) {
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
        log = { slots: [], head: 0, ids: new Set() };
        this.logs.set(spec.name, log);
      }
      if (log.ids.has(id)) log.slots = live(log).filter((s) => s.id !== id);
      log.ids.add(id);
      // Keep time order even if the clock was set back.
      let at = log.slots.length;
      while (at > log.head && log.slots[at - 1]!.at > now) at--;
      if (at === log.slots.length) log.slots.push({ id, at: now });
      else log.slots.splice(at, 0, { id, at: now });
      this.windows.set(spec.name, spec.windowMs);
    }
    return { ok: true };
  }

  giveBack(classNames: string[], id: string): void {
    for (const name of classNames) {
      const log = this.logs.get(name);
      if (!log?.ids.delete(id)) continue;
      log.slots = live(log).filter((s) => s.id !== id);
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
      used: count(this.prune(spec, now)),
      pausedForMs: this.pausedFor(spec.name, now),
    }));
  }

  sweep(): void {
    const now = this.clock.now();
    for (const [name, windowMs] of this.windows) {
      if (count(this.prune({ name, limit: 0, windowMs }, now)) === 0) {
        this.logs.delete(name);
        this.windows.delete(name);
      }
    }
    for (const [name, until] of this.pauses) if (until <= now) this.pauses.delete(name);
  }

  /** Drops slots taken at or before now - windowMs; returns what is left. */
  private prune(spec: LimitClassSpec, now: number): SlotLog {
    const log = this.logs.get(spec.name);
    if (!log) return { slots: [], head: 0, ids: new Set() };
    const cutoff = now - spec.windowMs;
    const { slots } = log;
    let head = log.head;
    while (head < slots.length && slots[head]!.at <= cutoff) log.ids.delete(slots[head++]!.id);
    log.head = head;
    // The dropped slots are let go once they are half the array (amortized O(1) per slot).
    if (head > 64 && head * 2 >= slots.length) live(log);
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
