// What an app may still use now, per class: the numbers behind X-RateLimit-* on the gateway's
// answers. Which logs bound it (the class, its pacing, the app's cap, the upstream-minute cap),
// and from their views what could start now (at once down to the reserve, then paced; nothing
// while paused), by when every slot counted now has left the window, and when the next could start.
//
// Pure: the book, the views and "now" are passed in; no clock, no I/O (headroom-reader.ts reads).
// Must never take, give back or grant a slot: headroom reports, the Store's atomic take decides.
import { copyWith } from '../object-copy.ts';
import type { LimitClassState } from '../store/slot-store.ts';
import type { ClassBook } from './class-book.ts';
import type { LimitClassName } from './limit-classes.ts';
import type { BookView } from './own-slots.ts';
import { type ClassView, startEstimateMs } from './slot-estimate.ts';
import type { ClassSpec } from './store-class.ts';

export interface Headroom {
  limit: number;
  /** Calls that could start now: the class, its pacing when it is engaged, caps, pauses. */
  remaining: number;
  /** Unix ms by which every slot counted now has left the window (the pause end when paused). */
  resetAtMs: number;
  /** Unix ms when the next call of this class could start (now when remaining > 0). */
  nextSlotAtMs: number;
}

/** The tightest class of a route for an app, with its name (what X-RateLimit-* on it show). */
export type ClassHeadroom = Headroom & { limitClass: LimitClassName };

/** What headroom reads of the book: the logs of a class and of the upstream-minute cap. */
export type HeadroomLogs = Pick<
  ClassBook,
  'spec' | 'paceSpec' | 'capSpec' | 'activeMinuteCap' | 'minuteCapSpec'
>;

/** The logs headroom of these classes reads (the class, its pacing, the app's cap, the minute cap). */
export function headroomSpecs(
  book: HeadroomLogs,
  app: string,
  names: readonly LimitClassName[],
  now: number,
): ClassSpec[] {
  const specs: ClassSpec[] = [];
  for (const name of names) {
    const spec = book.spec(name);
    specs.push(spec);
    const pace = book.paceSpec(name, spec.limit);
    if (pace) specs.push(pace);
    const cap = book.capSpec(app, name);
    if (cap) specs.push(cap);
  }
  const cap = names.includes('key') ? book.activeMinuteCap(now) : null;
  if (cap) specs.push(book.minuteCapSpec(cap));
  return specs;
}

/** Headroom per class from the states of its logs and their views (headroomSpecs, in that order). */
export function headroomFrom(a: {
  names: readonly LimitClassName[];
  specs: readonly ClassSpec[];
  states: readonly (LimitClassState | undefined)[];
  views: readonly (BookView | undefined)[];
  /** Below how many starts in its window the class starts the app's call at once (null: paced). */
  atOnceBelow(name: LimitClassName): number | null;
  now: number;
}): Partial<Record<LimitClassName, Headroom>> {
  const { now } = a;
  const out: Partial<Record<LimitClassName, Headroom>> = {};
  // One view per store class (a class's log may bound several of the names).
  const all = a.specs.map((spec, i) => ({ spec, state: a.states[i], view: a.views[i] }));
  for (const name of a.names) {
    const related = all.filter(({ spec: { cls } }) =>
      cls.kind === 'minute' ? name === 'key' : cls.cls === name,
    );
    const classView = related.find((r) => r.spec.cls.kind === 'class')?.view;
    const paceView = related.find((r) => r.spec.cls.kind === 'pace')?.view;
    const atOnce = a.atOnceBelow(name);
    let limit = Number.POSITIVE_INFINITY;
    let remaining = Number.POSITIVE_INFINITY;
    let resetAtMs = now;
    let nextSlotAtMs = now;
    for (const { spec, state, view } of related) {
      if (!state || !view) continue;
      // The upstream-minute cap is a passing bound: it lowers what remains, not the limit
      // an app is told it has (X-RateLimit-Limit stays the class's or the app's cap).
      if (spec.cls.kind !== 'minute' && spec.cls.kind !== 'pace') limit = Math.min(limit, view.limit);
      if (spec.cls.kind !== 'pace') remaining = Math.min(remaining, roomOf(view));
      const allOwn = view.ownCount >= state.used;
      const clears = state.used === 0 ? 0 : allOwn ? Math.max(0, view.ownLastExpiryMs) : view.windowMs;
      resetAtMs = Math.max(resetAtMs, now + Math.max(clears, state.pausedForMs));
    }
    if (classView && paceView) {
      // What pacing lets start now: at once down to the reserve (each start also enters the
      // pacing log), then paced.
      const used = classView.used;
      const first = atOnce === null ? 0 : Math.max(0, atOnce - used);
      const paced = Math.max(0, Math.min(roomOf(classView) - first, roomOf(paceView) - first));
      remaining = Math.min(remaining, classView.pausedForMs > 0 ? 0 : first + paced);
    }
    // The next start is now while any can start; only a class with no room needs an estimate
    // (it sorts this replica's slots in the window: kept off the path of every answer).
    if (remaining <= 0) {
      for (const { view } of related)
        if (view) nextSlotAtMs = Math.max(nextSlotAtMs, now + Math.ceil(startEstimateMs(view, 0)));
    }
    out[name] = { limit, remaining, resetAtMs, nextSlotAtMs };
  }
  return out;
}

/** The class with the fewest remaining (the first on a tie); null for none. */
export function tightest(
  classes: readonly LimitClassName[],
  all: Partial<Record<LimitClassName, Headroom>>,
): ClassHeadroom | null {
  let best: ClassHeadroom | null = null;
  for (const name of classes) {
    const h = all[name];
    if (h && (!best || h.remaining < best.remaining)) best = copyWith(h, { limitClass: name });
  }
  return best;
}

/** Starts a class view has room for now (0 while paused or at its limit). */
function roomOf(view: ClassView): number {
  return view.pausedForMs > 0 ? 0 : Math.max(0, view.limit - view.used);
}
