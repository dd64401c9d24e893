// A short memo of what X-RateLimit-* say per app and route, so a cache HIT does not read the
// Store on every answer (issue #12). An entry is used only while it is younger than maxAgeMs (on
// the injected clock) and nothing changed in this replica since: every grant, give-back, queue
// change and upstream signal bumps the epoch. What it can miss is another replica's starts for at
// most maxAgeMs; slots freeing meanwhile only make it say less than is left (safe). peek() renews
// an entry in the background past half its age, so steady HITs never find it lapsed.
// Must never: hand out an entry older than maxAgeMs, or one read before a local change.
import type { Headroom } from './headroom.ts';
import type { LimitClassName } from './limit-classes.ts';

type Entry = (Headroom & { limitClass: LimitClassName }) | null;

export class HeadroomMemo {
  private epoch = 0;
  private readonly entries = new Map<string, { at: number; epoch: number; value: Entry }>();
  /** Keys being read again by peek(). */
  private readonly renewing = new Set<string>();

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

  /**
   * The memoized value when get() would use it without reading; undefined otherwise. With `read`,
   * a value past half of maxAgeMs is read again in the background (one read per key at a time),
   * so a key asked for steadily (the HITs' X-RateLimit-*) is renewed before it lapses.
   */
  peek(key: string, now: number, read?: () => Promise<Entry>): Entry | undefined {
    const hit = this.entries.get(key);
    if (!hit || hit.epoch !== this.epoch || now < hit.at || now - hit.at >= this.maxAgeMs) return undefined;
    if (read && now - hit.at >= this.maxAgeMs / 2 && !this.renewing.has(key)) {
      this.renewing.add(key);
      const asOf = this.epoch;
      read()
        .then((value) => this.set(key, now, value, asOf))
        .catch(() => undefined)
        .finally(() => this.renewing.delete(key));
    }
    return hit.value;
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
