// The Redis store's slot role: sliding-window logs per class under the `{limits}` hash tag, every
// take one Lua script (slot-scripts.ts) on the server's clock.
//
// Must never: take a slot of one class and not the others.
import type { LimitClassSpec, LimitClassState, SlotStore, TakeResult } from '../slot-store.ts';
import { isNoPause, limitClasses, ttlOf, uniqueStrings } from '../store-util.ts';
import type { RedisLink } from './link.ts';
import { LIMITER_STATE, PAUSE_CLASS, TAKE_SLOTS, TAKE_SLOTS_READ } from './slot-scripts.ts';

export class RedisSlots implements SlotStore {
  constructor(private readonly link: RedisLink) {}

  async takeSlots(classes: LimitClassSpec[], id: string, read?: LimitClassSpec[]): Promise<TakeResult> {
    const specs = limitClasses(classes);
    if (!read) {
      if (specs.length === 0) return { ok: true };
      const args: (string | number)[] = [id];
      for (const spec of specs) args.push(spec.limit, Math.ceil(spec.windowMs));
      const keys = this.classKeys(specs.map((s) => s.name));
      const reply = (await this.link.script(TAKE_SLOTS, keys, args)) as number[];
      if (reply[0] === 1) return { ok: true };
      return { ok: false, name: specs[Number(reply[1]) - 1]!.name, retryAfterMs: Number(reply[2]) };
    }
    const args: (string | number)[] = [id, specs.length];
    for (const spec of specs) args.push(spec.limit, Math.ceil(spec.windowMs));
    for (const spec of read) args.push(Math.ceil(ttlOf(spec.windowMs, 'windowMs')));
    const all = [...specs, ...read];
    const keys = this.classKeys(all.map((s) => s.name));
    const reply = (await this.link.script(TAKE_SLOTS_READ, keys, args)) as number[];
    if (reply[0] !== 1)
      return { ok: false, name: specs[Number(reply[1]) - 1]!.name, retryAfterMs: Number(reply[2]) };
    return {
      ok: true,
      states: all.map((c, i) => ({
        name: c.name,
        used: Number(reply[1 + 2 * i]),
        pausedForMs: Number(reply[2 + 2 * i]),
      })),
    };
  }

  async returnSlots(classNames: string[], id: string): Promise<void> {
    const { link } = this;
    const names = uniqueStrings(classNames);
    await link.run(() => Promise.all(names.map((name) => link.client.zrem(link.k.slots(name), id))));
  }

  async pauseClass(name: string, durationMs: number): Promise<void> {
    if (isNoPause(durationMs)) return;
    const duration = ttlOf(durationMs, 'durationMs');
    await this.link.script(PAUSE_CLASS, [this.link.k.pause(name)], [duration]);
  }

  async limiterState(classes: LimitClassSpec[]): Promise<LimitClassState[]> {
    if (classes.length === 0) return [];
    const windows = classes.map((c) => Math.ceil(ttlOf(c.windowMs, 'windowMs')));
    const keys = this.classKeys(classes.map((c) => c.name));
    const reply = (await this.link.script(LIMITER_STATE, keys, windows)) as number[];
    return classes.map((c, i) => ({
      name: c.name,
      used: Number(reply[2 * i]),
      pausedForMs: Number(reply[2 * i + 1]),
    }));
  }

  private classKeys(names: string[]): string[] {
    return names.flatMap((name) => [this.link.k.slots(name), this.link.k.pause(name)]);
  }
}
