// This replica's own slots still in a window, per store class: what it took through the Store's
// atomic take and has not given back. They make an estimate exact for this replica's part of a
// log (slot-estimate.ts), and are copied into the local log when the Store cannot be reached
// (slot-fallback.ts). With a log's state read from the Store they say how a class looks now (a
// view: the limit in force, the window, what the log holds, when this replica's slots leave it).
//
// A record, not a limiter: the sliding-window logs that grant and refuse are the Store's
// (store/slot-store.ts), and nothing here refuses a call. In process; times are passed in. Must
// never read or write the Store, call Date.now(), or count a slot past its window (the oldest are
// dropped as the record is read).
import type { LimitClassSpec, LimitClassState } from '../store/slot-store.ts';
import type { ClassBook } from './class-book.ts';
import type { ClassView } from './slot-estimate.ts';
import type { OwnSlot } from './slot-fallback.ts';
import { type ClassSpec, decodeStoreClass } from './store-class.ts';

/** A class view with what headroom needs of this replica's own slots, without listing them. */
export interface BookView extends ClassView {
  /** This replica's slots in the class's log. */
  ownCount: number;
  /** ms from now until the newest of them leaves the window (0: none). */
  ownLastExpiryMs: number;
}

/** What the record reads of the book: the windows of the logs and the upstream-minute cap. */
export type BookWindows = Pick<
  ClassBook,
  'classes' | 'spec' | 'minuteCap' | 'minuteCapWindowMs' | 'resetMarginMs'
>;

export class OwnSlots {
  /** Per store class, this replica's slots still in a window (id -> when taken). */
  readonly logs = new Map<string, Map<string, number>>();
  /** The minute log kept (remember()), if any. */
  private ownMinute: string | null = null;
  /** Per store class, this replica's newest slot (the log's last entry, without a scan). */
  private readonly newest = new Map<string, { id: string; at: number }>();

  constructor(
    private readonly book: BookWindows,
    /** The limit in force for a log (slot-fallback.ts: the local share while the Store is unreachable). */
    private readonly limitOf: (spec: LimitClassSpec) => number = (spec) => spec.limit,
  ) {}

  /** Records one of this replica's slots; forgets those that have left their window. */
  remember(spec: ClassSpec, id: string, now: number): void {
    // One minute log is kept: the last one remembered. The others are dropped when it changes,
    // not looked for on every take (every key call remembers its minute).
    if (spec.cls.kind === 'minute' && spec.name !== this.ownMinute) {
      for (const name of this.logs.keys())
        if (decodeStoreClass(name)?.kind === 'minute' && name !== spec.name) this.logs.delete(name);
      this.ownMinute = spec.name;
    }
    let own = this.logs.get(spec.name);
    if (!own) {
      own = new Map();
      this.logs.set(spec.name, own);
    }
    // Insertion order is time order: the oldest are first.
    for (const [oldId, at] of own) {
      if (at + spec.windowMs > now) break;
      own.delete(oldId);
    }
    own.set(id, now);
    this.newest.set(spec.name, { id, at: now });
  }

  /** Gives one of this replica's slots back (the call did not start). */
  forget(name: string, id: string): void {
    this.logs.get(name)?.delete(id);
    if (this.newest.get(name)?.id === id) this.newest.delete(name);
  }

  /** When this replica took its newest slot still in the class's log (found again after a give-back). */
  private newestOwn(name: string, own: Map<string, number>): number | undefined {
    const known = this.newest.get(name);
    if (known && own.has(known.id)) return known.at;
    let last: { id: string; at: number } | undefined;
    for (const [id, at] of own) last = { id, at };
    if (last) this.newest.set(name, last);
    return last?.at;
  }

  /** This replica's slots still in a window, with their classes (copied into the local log on an outage). */
  *held(): Iterable<OwnSlot> {
    for (const [name, slots] of this.logs) {
      const c = decodeStoreClass(name);
      if (!c) continue;
      const windowMs =
        c.kind === 'minute'
          ? this.book.minuteCapWindowMs()
          : c.kind === 'class'
            ? this.book.spec(c.cls).windowMs
            : this.book.classes[c.cls].windowMs;
      for (const [id, at] of slots) yield { spec: { name, limit: 0, windowMs }, id, at };
    }
  }

  /**
   * How a class looks now. Drops this replica's slots that have left the window (the oldest are
   * first: insertion order is time order) and keeps the rest as they are; the list of their
   * expiries, which only an estimate needs, is built when it is first read.
   */
  view(spec: ClassSpec, state: LimitClassState, now: number): BookView {
    const own = this.logs.get(spec.name);
    const minute = spec.cls.kind === 'minute';
    const cap = this.book.minuteCap;
    const windowMs =
      minute && cap ? Math.max(1, cap.resetAtMs + this.book.resetMarginMs - now) : spec.windowMs;
    let ownLastExpiryMs = 0;
    if (own && !minute) {
      for (const [id, at] of own) {
        if (at + spec.windowMs > now) break;
        own.delete(id);
      }
      const last = own.size > 0 ? this.newestOwn(spec.name, own) : undefined;
      if (last !== undefined) ownLastExpiryMs = last + spec.windowMs - now;
    } else if (own && own.size > 0) ownLastExpiryMs = windowMs;
    const ownCount = own?.size ?? 0;
    const limit = this.limitOf(spec);
    let expiries: number[] | null = null;
    return {
      limit,
      windowMs,
      used: state.used,
      pausedForMs: state.pausedForMs,
      ownCount,
      ownLastExpiryMs,
      get ownExpiriesMs(): number[] {
        if (!expiries) {
          expiries = [];
          if (own) for (const at of own.values()) expiries.push(minute ? windowMs : at + spec.windowMs - now);
        }
        return expiries;
      },
    };
  }
}
