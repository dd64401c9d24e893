// Reads what an app may still use now (X-RateLimit-* on the gateway's answers): one limiterState
// round trip for the logs that bound it, with who competes for them when that reading is stale (it
// decides whether pacing is engaged), then headroom.ts's arithmetic over this replica's views of
// them (own-slots.ts). Or the same from states a caller read itself, after an upstream answer.
//
// Read-only I/O: must never take, give back or grant a slot, change a limit, or call Date.now()
// (the injected clock only).
import type { Clock } from '../clock.ts';
import type { LimitClassState, SlotStore } from '../store/slot-store.ts';
import type { ClassBook } from './class-book.ts';
import type { FairShare } from './fair-share.ts';
import { type ClassHeadroom, type Headroom, headroomFrom, headroomSpecs, tightest } from './headroom.ts';
import { LIMIT_CLASS_NAMES, type LimitClassName } from './limit-classes.ts';
import type { OwnSlots } from './own-slots.ts';
import type { ClassSpec } from './store-class.ts';

export interface HeadroomReaderOptions {
  clock: Clock;
  /** The governor's slot logs (slot-fallback.ts: the local log while the Store is unreachable). */
  store: SlotStore;
  book: ClassBook;
  fair: FairShare;
  own: OwnSlots;
}

export class HeadroomReader {
  constructor(private readonly o: HeadroomReaderOptions) {}

  /** What the app may still use now, per class (for X-RateLimit-* on the gateway's answers). */
  async headroom(app: string): Promise<Record<LimitClassName, Headroom>> {
    return (await this.headroomOf(app, LIMIT_CLASS_NAMES)) as Record<LimitClassName, Headroom>;
  }

  /** The tightest of these classes for the app (fewest remaining; the first on a tie); null for none. */
  async headroomFor(app: string, classes: LimitClassName[]): Promise<ClassHeadroom | null> {
    if (classes.length === 0) return null;
    return tightest(classes, await this.headroomOf(app, classes));
  }

  /**
   * What headroomFor(app, classes) would read now, for a caller that reads them in a round trip
   * of its own (upstream-follower.ts, after an answer); null while who competes must be read
   * first (then headroomFor reads it).
   */
  headroomReads(app: string, classes: readonly LimitClassName[]): ClassSpec[] | null {
    if (classes.length === 0 || this.o.fair.refreshPlan(classes)) return null;
    return headroomSpecs(this.o.book, app, classes, this.o.clock.now());
  }

  /**
   * headroomFor() from states read by the caller (by log name) instead of a store read, with the
   * limits in force now; undefined when a log it needs was not read.
   */
  headroomForFrom(
    app: string,
    classes: readonly LimitClassName[],
    read: ReadonlyMap<string, LimitClassState>,
  ): ClassHeadroom | null | undefined {
    const now = this.o.clock.now();
    if (classes.length === 0 || this.o.fair.refreshPlan(classes)) return undefined;
    const specs = headroomSpecs(this.o.book, app, classes, now);
    const states: LimitClassState[] = [];
    for (const spec of specs) {
      const state = read.get(spec.name);
      if (!state) return undefined;
      states.push(state);
    }
    return tightest(classes, this.from(app, classes, specs, states, now));
  }

  /** headroom() for the named classes only: one store read of just what they need. */
  private async headroomOf(
    app: string,
    names: readonly LimitClassName[],
  ): Promise<Partial<Record<LimitClassName, Headroom>>> {
    const now = this.o.clock.now();
    const specs = headroomSpecs(this.o.book, app, names, now);
    // Who competes (pacing engaged or not) is read in the same round trip when it is stale.
    const plan = this.o.fair.refreshPlan(names);
    const states = await this.o.store.limiterState(plan ? [...specs, ...plan.specs] : specs);
    plan?.apply(states.slice(specs.length));
    return this.from(app, names, specs, states, now);
  }

  /** Headroom per class from the states of its logs (headroomSpecs, in that order). */
  private from(
    app: string,
    names: readonly LimitClassName[],
    specs: ClassSpec[],
    states: readonly (LimitClassState | undefined)[],
    now: number,
  ): Partial<Record<LimitClassName, Headroom>> {
    const views = specs.map((spec, i) => {
      const state = states[i];
      return state && this.o.own.view(spec, state, now);
    });
    return headroomFrom({
      names,
      specs,
      states,
      views,
      atOnceBelow: (name) => this.o.book.atOnceBelow(name, app),
      now,
    });
  }
}
