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

/**
 * One class's slots taken by this replica, in the order taken (time order), with O(1) work per
 * slot: the oldest leave by moving `head` on, a give-back only forgets the id (its entry is
 * passed over when reached). A Map<id, at> read from its start to drop the oldest cost O(n) per
 * call instead: V8 keeps a deleted entry's hole until the table is rebuilt, and every read from
 * the start walked them all (an allotment of thousands a minute held tens of thousands).
 */
export class SlotRecord {
  private ids: string[] = [];
  private ats: number[] = [];
  /** Entries before `head` have left; `base` is how many entries compaction has dropped. */
  private head = 0;
  private base = 0;
  /** Each slot still held -> its entry's index plus `base`. */
  private readonly held = new Map<string, number>();

  /** Slots held. */
  get size(): number {
    return this.held.size;
  }

  /** Records a slot; one already held is moved to `at` in its place (as Map.set would). */
  set(id: string, at: number): void {
    const known = this.held.get(id);
    if (known !== undefined) {
      this.ats[known - this.base] = at;
      return;
    }
    this.held.set(id, this.base + this.ids.length);
    this.ids.push(id);
    this.ats.push(at);
  }

  /** Forgets a slot (given back); false when it was not held. */
  delete(id: string): boolean {
    return this.held.delete(id);
  }

  /** Drops the oldest held slots that have left a window of `windowMs`, up to the first still in it. */
  dropLeft(windowMs: number, now: number): void {
    const { ids, ats, held } = this;
    let i = this.head;
    for (; i < ids.length; i++) {
      const id = ids[i]!;
      if (held.get(id) !== this.base + i) continue; // given back earlier
      if (ats[i]! + windowMs > now) break;
      held.delete(id);
    }
    this.head = i;
    if (held.size === 0) {
      this.base += ids.length;
      this.ids = [];
      this.ats = [];
      this.head = 0;
    } else if (i > 64 && i * 2 >= ids.length) {
      // Amortized O(1) per slot: the entries before head go once they are half the arrays.
      this.ids = ids.slice(i);
      this.ats = ats.slice(i);
      this.base += i;
      this.head = 0;
    }
  }

  /** When the newest held slot was taken; undefined when none is held. */
  newestAt(): number | undefined {
    for (let i = this.ids.length - 1; i >= this.head; i--)
      if (this.held.get(this.ids[i]!) === this.base + i) return this.ats[i];
    return undefined;
  }

  /** The held slots, oldest first, as [id, when taken]. */
  *entries(): IterableIterator<[string, number]> {
    for (let i = this.head; i < this.ids.length; i++) {
      const id = this.ids[i]!;
      if (this.held.get(id) === this.base + i) yield [id, this.ats[i]!];
    }
  }
}

export class OwnSlots {
  /** Per store class, this replica's slots still in a window, oldest first. */
  readonly logs = new Map<string, SlotRecord>();
  /** The minute log kept (remember()), if any. */
  private ownMinute: string | null = null;

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
      own = new SlotRecord();
      this.logs.set(spec.name, own);
    }
    own.dropLeft(spec.windowMs, now);
    own.set(id, now);
  }

  /** Gives one of this replica's slots back (the call did not start). */
  forget(name: string, id: string): void {
    this.logs.get(name)?.delete(id);
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
      for (const [id, at] of slots.entries()) yield { spec: { name, limit: 0, windowMs }, id, at };
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
      own.dropLeft(spec.windowMs, now);
      const last = own.newestAt();
      if (last !== undefined) ownLastExpiryMs = last + spec.windowMs - now;
    } else if (own && own.size > 0) ownLastExpiryMs = windowMs;
    return new OwnView(
      this.limitOf(spec),
      windowMs,
      state,
      own,
      ownLastExpiryMs,
      minute ? null : spec.windowMs,
      now,
    );
  }
}

/**
 * A BookView whose list of expiries is built when first read. A class, not an object literal
 * with a getter: V8 builds such a literal through the runtime, ~1 µs each, on every view.
 */
class OwnView implements BookView {
  readonly used: number;
  readonly pausedForMs: number;
  readonly ownCount: number;
  private expiries: number[] | null = null;

  constructor(
    readonly limit: number,
    readonly windowMs: number,
    state: LimitClassState,
    private readonly own: SlotRecord | undefined,
    readonly ownLastExpiryMs: number,
    /** The class's window for each slot's own expiry; null: the minute log (all leave at its reset). */
    private readonly slotWindowMs: number | null,
    private readonly now: number,
  ) {
    this.used = state.used;
    this.pausedForMs = state.pausedForMs;
    this.ownCount = own?.size ?? 0;
  }

  get ownExpiriesMs(): number[] {
    if (!this.expiries) {
      const expiries: number[] = [];
      const { own, slotWindowMs, windowMs, now } = this;
      if (own)
        for (const [, at] of own.entries())
          expiries.push(slotWindowMs === null ? windowMs : at + slotWindowMs - now);
      this.expiries = expiries;
    }
    return this.expiries;
  }
}
