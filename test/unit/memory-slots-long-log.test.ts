// MemorySlots with logs far longer than a few slots (a class with a high limit holds tens of
// thousands): the slots leaving the window move a head index on instead of shifting the array.
// Checked against a plain reference model of the sliding window over long random sequences of
// takes, give-backs, retakes under the same id and clock moves (forward and back).
import { describe, expect, it } from 'vitest';
import { ManualClock, seededRandom } from '../../src/clock.ts';
import { MemorySlots } from '../../src/store/memory/memory-slots.ts';
import type { LimitClassSpec } from '../../src/store/slot-store.ts';

/** The sliding window as the contract states it: a slot counts for windowMs after it was taken. */
class Reference {
  readonly slots = new Map<string, Map<string, number>>();
  constructor(private readonly clock: ManualClock) {}
  /** The log without the slots out of the window (in insertion order, not sorted). */
  private live(spec: LimitClassSpec): Map<string, number> {
    const now = this.clock.now();
    const log = this.slots.get(spec.name) ?? new Map<string, number>();
    for (const [id, at] of log) if (at <= now - spec.windowMs) log.delete(id);
    return log;
  }
  used(spec: LimitClassSpec): number {
    return this.live(spec).size;
  }
  take(specs: LimitClassSpec[], id: string): { ok: boolean; retryAfterMs?: number } {
    const now = this.clock.now();
    let wait = 0;
    for (const spec of specs) {
      const live = this.live(spec);
      if (live.size >= spec.limit && !live.has(id)) {
        // Sorted only when it refuses: the slot whose leaving makes room.
        const times = [...live.values()].sort((a, b) => a - b);
        const freeing = times[times.length - spec.limit]!;
        wait = Math.max(wait, freeing + spec.windowMs - now);
      }
    }
    if (wait > 0) return { ok: false, retryAfterMs: wait };
    for (const spec of specs) {
      const log = this.slots.get(spec.name) ?? new Map<string, number>();
      log.delete(id);
      log.set(id, now);
      this.slots.set(spec.name, log);
    }
    return { ok: true };
  }
  giveBack(names: string[], id: string): void {
    for (const name of names) this.slots.get(name)?.delete(id);
  }
}

describe('MemorySlots: long logs', () => {
  // About 10 s alone on a 2-core VM (three seeds of 20,000 steps over logs of thousands of
  // slots), three times that on a loaded CI machine: a deterministic model check, not a timing.
  it('counts and refuses as the sliding window says over 20,000 random steps', { timeout: 120_000 }, () => {
    for (const seed of [1, 2, 3]) {
      const clock = new ManualClock(1_000_000);
      const slots = new MemorySlots(clock);
      const ref = new Reference(clock);
      const wide: LimitClassSpec = { name: 'wide', limit: 5_000, windowMs: 2_000 };
      const narrow: LimitClassSpec = { name: 'narrow', limit: 300, windowMs: 700 };
      const rnd = seededRandom(seed);
      const taken: string[] = [];
      for (let step = 0; step < 20_000; step++) {
        const r = rnd();
        if (r < 0.75) {
          const specs = rnd() < 0.5 ? [wide] : [wide, narrow];
          // Now and then a retake under an id already taken (a retry counts its start once).
          const id = rnd() < 0.05 && taken.length > 0 ? taken[Math.floor(rnd() * taken.length)]! : `t${step}`;
          const got = slots.take(specs, id);
          const want = ref.take(specs, id);
          expect(got.ok, `seed ${seed} step ${step}`).toBe(want.ok);
          if (!got.ok) expect(got.retryAfterMs).toBe(want.retryAfterMs);
          else taken.push(id);
        } else if (r < 0.85 && taken.length > 0) {
          const id = taken[Math.floor(rnd() * taken.length)]!;
          slots.giveBack(['wide', 'narrow'], id);
          ref.giveBack(['wide', 'narrow'], id);
        } else if (r < 0.995) {
          clock.advance(Math.floor(rnd() * 3));
        } else {
          // The clock set back a little (a slot is still kept in time order).
          clock.advance(-Math.floor(rnd() * 5));
        }
        if (step % 97 === 0) {
          const [w, n] = slots.state([wide, narrow]);
          expect(w!.used, `seed ${seed} step ${step}`).toBe(ref.used(wide));
          expect(n!.used, `seed ${seed} step ${step}`).toBe(ref.used(narrow));
        }
      }
      // The window passes: nothing is left, and sweep forgets the logs.
      clock.advance(2_001);
      expect(slots.state([wide, narrow]).map((s) => s.used)).toEqual([0, 0]);
      slots.sweep();
      expect(slots.take([{ ...narrow, limit: 1 }], 'after')).toEqual({ ok: true });
    }
  });
});
