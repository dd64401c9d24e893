// A short memo of what X-RateLimit-* say per app and route, so a cache HIT does not read the
// Store on every answer (issue #12). An entry is used only while it is younger than maxAgeMs (on
// the injected clock) and nothing changed in this replica since: every grant, give-back, queue
// change and upstream signal bumps the epoch. What it can miss is another replica's starts for at
// most maxAgeMs; slots freeing meanwhile only make it say less than is left (safe).
// Must never: hand out an entry older than maxAgeMs, or one read before a local change.
import type { Headroom } from './class-book.ts';
import type { LimitClassName } from './limit-classes.ts';

type Entry = (Headroom & { limitClass: LimitClassName }) | null;

export class HeadroomMemo {
  private epoch = 0;
  private readonly entries = new Map<string, { at: number; epoch: number; value: Entry }>();

  constructor(private readonly maxAgeMs: number) {}

  /** Something changed here (a start, a give-back, a waiter, an upstream signal); the new epoch. */
  changed(): number {
    return ++this.epoch;
  }

  /**
   * Keeps a value read elsewhere (with the changes up to epoch `asOf` in it), unless something
   * else has changed here since.
   */
  set(key: string, now: number, value: Entry, asOf: number): void {
    if (asOf !== this.epoch || this.maxAgeMs <= 0) return;
    if (this.entries.size > 10_000) this.entries.clear();
    this.entries.set(key, { at: now, epoch: asOf, value });
  }

  /** The memoized value when get() would use it without reading; undefined otherwise. */
  peek(key: string, now: number): Entry | undefined {
    const hit = this.entries.get(key);
    if (hit && hit.epoch === this.epoch && now - hit.at < this.maxAgeMs && now >= hit.at) return hit.value;
    return undefined;
  }

  async get(key: string, now: number, read: () => Promise<Entry>): Promise<Entry> {
    const hit = this.entries.get(key);
    if (hit && hit.epoch === this.epoch && now - hit.at < this.maxAgeMs && now >= hit.at) return hit.value;
    const epoch = this.epoch;
    const value = await read();
    if (this.maxAgeMs > 0) {
      if (this.entries.size > 10_000) this.entries.clear();
      this.entries.set(key, { at: now, epoch, value });
    }
    return value;
  }
}
