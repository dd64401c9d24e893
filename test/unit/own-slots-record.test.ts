// SlotRecord (limits/own-slots.ts), this replica's record of one class's slots, against the Map it
// replaced as a model: the same slots held, in the same order, the same newest, under takes,
// give-backs, a window sliding over thousands of slots (compaction) and a slot taken again.
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../src/clock.ts';
import { SlotRecord } from '../../src/limits/own-slots.ts';

/** The old record: a Map read from its start to drop the oldest (insertion order is time order). */
class MapModel {
  readonly slots = new Map<string, number>();
  set(id: string, at: number): void {
    this.slots.set(id, at);
  }
  delete(id: string): boolean {
    return this.slots.delete(id);
  }
  dropLeft(windowMs: number, now: number): void {
    for (const [id, at] of this.slots) {
      if (at + windowMs > now) break;
      this.slots.delete(id);
    }
  }
  newestAt(): number | undefined {
    let last: number | undefined;
    for (const at of this.slots.values()) last = at;
    return last;
  }
}

describe('SlotRecord', () => {
  it('drops the oldest up to the first slot still in the window, passing over slots given back', () => {
    const r = new SlotRecord();
    r.set('a', 0);
    r.set('b', 10);
    r.set('c', 20);
    r.set('d', 30);
    expect(r.delete('b')).toBe(true);
    expect(r.delete('b')).toBe(false);
    r.dropLeft(100, 115); // a (0) and the forgotten b leave; c (20) is still in
    expect([...r.entries()]).toEqual([
      ['c', 20],
      ['d', 30],
    ]);
    expect(r.size).toBe(2);
    expect(r.delete('d')).toBe(true);
    expect(r.newestAt()).toBe(20); // the newest given back: the one before it
    r.dropLeft(100, 121);
    expect(r.size).toBe(0);
    expect(r.newestAt()).toBeUndefined();
    r.set('e', 200);
    expect([...r.entries()]).toEqual([['e', 200]]);
  });

  it('keeps a slot taken again in its place with its new time, as Map.set did', () => {
    const r = new SlotRecord();
    r.set('a', 0);
    r.set('b', 5);
    r.set('a', 7);
    expect([...r.entries()]).toEqual([
      ['a', 7],
      ['b', 5],
    ]);
    r.dropLeft(10, 16); // b (5) is not reached: a (7) is first and still in
    expect(r.size).toBe(2);
  });

  it('holds what the Map held through 20,000 takes, give-backs and a sliding window', () => {
    const random = seededRandom(33);
    const r = new SlotRecord();
    const m = new MapModel();
    const windowMs = 60_000;
    let now = 0;
    let seq = 0;
    const live: string[] = [];
    for (let step = 0; step < 20_000; step++) {
      now += Math.floor(random() * 12); // ~5 slots a minute-tenth: thousands in one window
      const roll = random();
      if (roll < 0.8) {
        const id = `i:${++seq}`;
        r.dropLeft(windowMs, now);
        m.dropLeft(windowMs, now);
        r.set(id, now);
        m.set(id, now);
        live.push(id);
      } else if (roll < 0.9 && live.length > 0) {
        const id = live[Math.floor(random() * live.length)]!;
        expect(r.delete(id)).toBe(m.delete(id));
      } else {
        r.dropLeft(windowMs, now);
        m.dropLeft(windowMs, now);
      }
      if (step % 997 === 0 || step === 19_999) {
        expect(r.size).toBe(m.slots.size);
        expect([...r.entries()]).toEqual([...m.slots.entries()]);
      }
      expect(r.newestAt()).toBe(m.newestAt());
    }
    expect(m.slots.size).toBeGreaterThan(1_000);
  });
});
