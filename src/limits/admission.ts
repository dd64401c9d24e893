// A waiter's way in, through the Store: the atomic take of every store class it needs, the Permit
// a granted take becomes, the give-back of its slots, and the one read a deadline estimate makes.
// A take tries the classes nobody else competes for at once first and, when one of them is down to
// its reserve, takes again with it paced. A permit remembers this replica's slots (own-slots.ts),
// counts its key call in flight until it is released, and keeps what its take answered of the
// logs for observe() to stand in for a read.
//
// The Store I/O of admission, all through slot-fallback.ts (the only door to the slot logs). The
// decisions are pure parts: class-book.ts (which store classes, at once or paced), start-verdict.ts
// (who cannot start in time, how long a refusal lasts). Must never: grant without an atomic take,
// take time from anything but the injected clock, or hold a slot for a call that never left the
// gateway once the caller says so (release(false)).
import type { Clock } from '../clock.ts';
import type { LimitClassState } from '../store/slot-store.ts';
import type { ClassBook } from './class-book.ts';
import type { FairShare } from './fair-share.ts';
import type { HeadroomMemo } from './headroom-memo.ts';
import type { LimitClassName } from './limit-classes.ts';
import type { OwnSlots } from './own-slots.ts';
import { type Permit, permit } from './permit.ts';
import type { GovernedSlots } from './slot-fallback.ts';
import { hopelessWaiters, refusalLastsMs, specsToRead, type Verdict } from './start-verdict.ts';
import { type ClassSpec, decodeStoreClass, type StoreClass } from './store-class.ts';
import type { WaitStats } from './wait-stats.ts';
import type { LineWaiter, Refusal, WaitingLine } from './waiting-line.ts';

/** A waiter as admission sees it. */
export interface Candidate extends LineWaiter {
  readonly id: string;
  readonly classes: LimitClassName[];
  readonly enqueuedAt: number;
  /** The store classes of the latest take (what a permit gives back). */
  specs?: ClassSpec[];
  /** The logs' states the granted take answered (its own classes, the minute log). */
  states?: LimitClassState[];
}

/** What a permit's take answered of the logs, with the headroom epoch and the time of its grant. */
export interface TakeSeen {
  states: ReadonlyMap<string, LimitClassState>;
  epoch: number;
  at: number;
}

export interface AdmissionOptions {
  clock: Clock;
  /** The slot logs (slot-fallback.ts: the local shares while the Store is unreachable). */
  slots: GovernedSlots;
  book: ClassBook;
  own: OwnSlots;
  fair: FairShare;
  /** Told of every grant and give-back (X-RateLimit-* may change). */
  memo: HeadroomMemo;
  stats: WaitStats;
  fairRefreshMs: number;
  resetMarginMs: number;
  /** A permit gave slots of these classes back: the lines that wait for any of them look again. */
  onReturned(classes: LimitClassName[]): void;
}

export class Admission {
  /** This replica's calls that spend `key`: granted, not yet released. */
  keyInFlight = 0;
  /** Per permit, what its take answered of the logs. */
  private readonly seen = new WeakMap<Permit, TakeSeen>();

  constructor(private readonly o: AdmissionOptions) {}

  /**
   * One atomic take of every store class the waiter needs; null when granted. Classes nobody else
   * competes for are tried at once first (class-book.ts); one that is down to its reserve refuses
   * that, and the take is made again with it paced. The refusal returned is the paced take's, but
   * says to try again when the first of the two ways can succeed.
   */
  async take(w: Candidate): Promise<Refusal | null> {
    const { book, clock, fair } = this.o;
    // Who waits for and competes for these classes, read again once past refreshMs. When the last
    // reading says no other app does, the take goes out at once on it and the new reading comes
    // back in the take's own round trip; if that one says otherwise, the slots are given back and
    // taken again on it. Any other reading is read first (issue 33: at fewer than ~10 calls a
    // second per class, every call read it first, a store round trip before its take).
    let plan = fair.refreshPlan(w.classes);
    if (plan && !fair.alone(w.classes, w.app)) {
      await fair.refresh(w.classes);
      plan = null;
    }
    let atOnce = book.atOnceClasses(w, clock.now());
    let soonestMs = Number.POSITIVE_INFINITY;
    for (;;) {
      w.specs = book.specsFor(w, atOnce);
      // The minute log too when this call does not take it (its answer may still move the cap).
      const minute = w.classes.includes('key') ? null : book.activeMinuteCap(clock.now());
      const read = minute ? [book.minuteCapSpec(minute)] : [];
      const folded = plan;
      plan = null;
      const result = await this.o.slots.takeSlots(w.specs, w.id, folded ? [...read, ...folded.specs] : read);
      if (folded && !result.ok) await fair.refresh(w.classes);
      if (result.ok) {
        const states = result.states ?? [];
        const own = states.length - (folded?.specs.length ?? 0);
        w.states = states.slice(0, own);
        if (!folded) return null;
        folded.apply(states.slice(own));
        if (fair.alone(w.classes, w.app)) return null;
        // Another app waits or competes after all: this take is made again on the new reading.
        await this.giveBack(w);
        atOnce = book.atOnceClasses(w, clock.now());
        continue;
      }
      const cls: StoreClass = decodeStoreClass(result.name) ?? { kind: 'class', cls: w.classes[0] ?? 'key' };
      if (cls.kind === 'class' && atOnce.delete(cls.cls)) {
        // Down to its reserve: pacing engages for this class until its log frees a slot.
        book.downToReserve(cls.cls, clock.now() + result.retryAfterMs);
        soonestMs = Math.min(soonestMs, result.retryAfterMs);
        continue;
      }
      const cap = book.minuteCap;
      const retryAfterMs = refusalLastsMs(cls, result.retryAfterMs, {
        fairRefreshMs: this.o.fairRefreshMs,
        minuteResetInMs: cap ? cap.resetAtMs + this.o.resetMarginMs - clock.now() : undefined,
      });
      return { cls, name: result.name, retryAfterMs: Math.min(retryAfterMs, soonestMs) };
    }
  }

  /** The permit of a granted take: its slots remembered, its key call counted in flight. */
  grant(w: Candidate): Permit {
    const { book, own, memo } = this.o;
    const epoch = memo.changed();
    const now = this.o.clock.now();
    const waitedMs = Math.max(0, now - w.enqueuedAt);
    const specs = w.specs ?? book.specsFor(w);
    const names = specs.map((s) => s.name);
    for (const spec of specs) own.remember(spec, w.id, now);
    const spendsKey = w.classes.includes('key');
    if (spendsKey) this.keyInFlight++;
    this.o.stats.granted(w.app, waitedMs);
    const giveBack = async (back: string[], classes: LimitClassName[]) => {
      memo.changed();
      for (const name of back) own.forget(name, w.id);
      for (const c of classes) book.slotsReturned(c);
      await this.o.slots.returnSlots(back, w.id);
      this.o.onReturned(classes);
    };
    const granted = permit(
      waitedMs,
      w.classes,
      async (sentUpstream) => {
        if (spendsKey) this.keyInFlight--;
        if (!sentUpstream) await giveBack(names, w.classes);
      },
      // Only a class's own logs (itself, its pacing, the app's cap and share); never the key's
      // upstream-minute cap, which the call did spend.
      async (classes) => {
        const back = specs
          .filter((s) => s.cls.kind !== 'minute' && classes.includes(s.cls.cls))
          .map((s) => s.name);
        await giveBack(back, classes);
      },
    );
    if (w.states) {
      const states = new Map<string, LimitClassState>();
      for (const s of w.states) states.set(s.name, s);
      this.seen.set(granted, { states, epoch, at: now });
    }
    return granted;
  }

  /** What the permit's take answered of the logs, if it answered any. */
  seenBy(granted: Permit): TakeSeen | undefined {
    return this.seen.get(granted);
  }

  /** Gives back the slots of a take that was granted but not handed out (the waiter left meanwhile). */
  async giveBack(w: Candidate): Promise<void> {
    this.o.memo.changed();
    for (const c of w.classes) this.o.book.slotsReturned(c);
    await this.o.slots.returnSlots(this.namesOf(w), w.id);
  }

  /** The log names of the waiter's latest take (or of the take it would make now). */
  namesOf(w: Candidate): string[] {
    return (w.specs ?? this.o.book.specsFor(w)).map((s) => s.name);
  }

  /** Which of `candidates` cannot start before their deadline (start-verdict.ts); one Store read. */
  async estimate<W extends Candidate>(queue: WaitingLine<W>, candidates: W[]): Promise<Map<W, Verdict>> {
    const { book } = this.o;
    const order = queue.ordered();
    if (order.length === 0 || candidates.length === 0) return new Map();
    const paths = new Map<W, ClassSpec[][]>();
    const pathsOf = (w: W) => {
      const known = paths.get(w);
      if (known) return known;
      const p = book.pathsFor(w);
      paths.set(w, p);
      return p;
    };
    const list = specsToRead(order, pathsOf);
    const states = await this.o.slots.limiterState(list);
    const now = this.o.clock.now();
    const byName = new Map<string, LimitClassState>();
    list.forEach((spec, i) => {
      const state = states[i];
      if (state) byName.set(spec.name, state);
    });
    return hopelessWaiters({
      order,
      candidates: new Set(candidates),
      appOf: (w) => w.app,
      deadlineOf: (w) => w.deadline,
      pathsOf,
      viewOf: (spec) => {
        const state = byName.get(spec.name);
        return state && { view: this.o.own.view(spec, state, now), state };
      },
      // The minute cap's refusal lasts until the reset unless the calls it counted as in flight
      // show they were counted (it then rises): no lower bound from it while some may.
      freesAt: (spec) =>
        spec.cls.kind === 'minute' && (book.minuteCap?.uncounted ?? 0) > 0
          ? undefined
          : queue.freesAt(spec.name),
      isBlocked: (app) => queue.isBlocked(app, now),
      windowOf: (c) => book.classes[c].windowMs,
      now,
    });
  }
}
