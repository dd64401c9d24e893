// The limiter's book of classes: the effective limits (the key's follows X-RateLimit-Limit),
// the upstream-minute cap (X-RateLimit-Remaining), per-app caps and weights, and this replica's
// own slots. It says which store classes one call takes (the route's classes, their pacing, the
// app's cap and share, the minute cap), how a class looks for an estimate, and what an app has
// left (headroom).
//
// Pacing engages only when needed. A class whose pacing is on is taken one of two ways:
// - at once, while no other app competes for it (fair-share.ts): the class log with its limit
//   less `reserve`, and the pacing log with no limit (it still records the start);
// - paced: the class log with its whole limit and the pacing log with `burst`.
// The class log is in both, so neither way ever lets more than the limit start in a window.
//
// No waiting and no granting here (rate-governor.ts does that through the Store's atomic take),
// and no reading of upstream answers: upstream-follower.ts sets the key limit and the minute cap.
// Must never call Date.now(): every time comes from the injected clock.
import type { Clock } from '../clock.ts';
import type { LimitClassState } from '../store/store.ts';
import type { FairShare } from './fair-share.ts';
import {
  LIMIT_CLASS_NAMES,
  type LimitClassConfig,
  type LimitClassName,
  paceOf,
  startsAtOnceBelow,
} from './limit-classes.ts';
import { type ClassView, startEstimateMs } from './slot-estimate.ts';
import type { GovernedSlots, OwnSlot } from './slot-fallback.ts';
import { type ClassSpec, classSpec, decodeStoreClass } from './store-class.ts';

export interface AppLimits {
  name: string;
  /** Share of a saturated class relative to other apps of the same priority. Default 1. */
  weight?: number;
  /** Strict order between apps: a higher priority is served first. Default 0. */
  priority?: number;
  /** This app's own ceiling per class, calls per the class's window (across replicas). */
  caps?: Partial<Record<LimitClassName, number>>;
}

export interface Headroom {
  limit: number;
  /** Calls that could start now: the class, its pacing when it is engaged, caps, pauses. */
  remaining: number;
  /** Unix ms by which every slot counted now has left the window (the pause end when paused). */
  resetAtMs: number;
  /** Unix ms when the next call of this class could start (now when remaining > 0). */
  nextSlotAtMs: number;
}

/** The upstream's current minute: at most `limit` key calls in the log key~<resetAtMs>. */
export interface MinuteCap {
  resetAtMs: number;
  limit: number;
  /**
   * The X-RateLimit-Remaining it was worked out from. Within one minute the upstream's Remaining
   * only falls, so the lowest is its newest count.
   */
  remaining?: number;
  /** The replica whose answer it was worked out from. */
  by?: string;
  /**
   * Of that replica's calls in flight then (subtracted: perhaps not yet counted upstream), how
   * many have not answered since with an older count (which shows they were counted).
   */
  uncounted?: number;
}

/** A class view with what headroom needs of this replica's own slots, without listing them. */
export interface BookView extends ClassView {
  /** This replica's slots in the class's log. */
  ownCount: number;
  /** ms from now until the newest of them leaves the window (0: none). */
  ownLastExpiryMs: number;
}

/** A pacing log's limit when a call is taken at once: it records the start, never refuses it. */
const RECORD_ONLY = 1_000_000_000;

export class ClassBook {
  keyLimit: number;
  minuteCap: MinuteCap | null = null;
  /** This replica's own slots still in a window, per store class (for estimates). */
  readonly ownSlots = new Map<string, Map<string, number>>();
  /** The minute log ownSlots keeps (remember()), if any. */
  private ownMinute: string | null = null;
  /** Per store class, this replica's newest slot (ownSlots' last entry, without a scan). */
  private readonly newest = new Map<string, { id: string; at: number }>();
  private readonly apps = new Map<string, AppLimits>();
  /** Per class: until when its log is known to hold its limit less the reserve (a take at once fails). */
  private readonly lowUntil = new Map<LimitClassName, number>();

  constructor(
    private readonly store: GovernedSlots,
    private readonly clock: Clock,
    readonly classes: Record<LimitClassName, LimitClassConfig>,
    apps: AppLimits[],
    private readonly fair: FairShare,
    private readonly resetMarginMs: number,
    /** A key limit set in config is a ceiling: X-RateLimit-Limit may lower it, never raise it. */
    public keyCeiling = Number.POSITIVE_INFINITY,
  ) {
    this.setApps(apps);
    this.keyLimit = classes.key.limit;
  }

  /** Replaces every app's weight, priority and caps (config reload); checks them all first. */
  setApps(apps: AppLimits[]): void {
    for (const app of apps) {
      if (app.weight !== undefined && !(app.weight > 0))
        throw new RangeError(`weight of ${app.name} must be > 0`);
      for (const [c, cap] of Object.entries(app.caps ?? {}))
        if (!Number.isSafeInteger(cap) || (cap as number) < 0)
          throw new RangeError(`cap ${c} of ${app.name} must be an integer >= 0`);
    }
    this.apps.clear();
    for (const app of apps) this.apps.set(app.name, app);
  }

  /** New class limits (config reload), in place: every holder of `classes` sees them at once. */
  setClasses(next: Record<LimitClassName, LimitClassConfig>, keyCeiling: number): void {
    for (const name of LIMIT_CLASS_NAMES) Object.assign(this.classes[name], next[name]);
    this.keyCeiling = keyCeiling;
    this.lowUntil.clear();
    // The next upstream answer lowers it again if X-RateLimit-Limit says less.
    this.keyLimit = Math.min(next.key.limit, keyCeiling);
  }

  /** Follows the upstream's X-RateLimit-Limit (up to the ceiling); true when the limit changed. */
  followKeyLimit(upstreamLimit: number): boolean {
    const next = Math.min(upstreamLimit, this.keyCeiling);
    if (next === this.keyLimit) return false;
    this.keyLimit = next;
    return true;
  }

  appNames(): string[] {
    return [...this.apps.keys()];
  }

  caps(app: string): Partial<Record<LimitClassName, number>> {
    return { ...this.apps.get(app)?.caps };
  }

  /** What the app may still use now, per class (for X-RateLimit-* on the gateway's answers). */
  async headroom(app: string): Promise<Record<LimitClassName, Headroom>> {
    return (await this.headroomOf(app, LIMIT_CLASS_NAMES)) as Record<LimitClassName, Headroom>;
  }

  /** headroom() for the named classes only: one store read of just what they need. */
  private async headroomOf(
    app: string,
    names: readonly LimitClassName[],
  ): Promise<Partial<Record<LimitClassName, Headroom>>> {
    const now = this.clock.now();
    const specs = this.headroomSpecs(app, names, now);
    // Who competes (pacing engaged or not) is read in the same round trip when it is stale.
    const plan = this.fair.refreshPlan(names);
    const states = await this.store.limiterState(plan ? [...specs, ...plan.specs] : specs);
    plan?.apply(states.slice(specs.length));
    return this.headroomFrom(app, names, specs, states, now);
  }

  /** The logs headroom of these classes reads (the class, its pacing, the app's cap, the minute cap). */
  private headroomSpecs(app: string, names: readonly LimitClassName[], now: number): ClassSpec[] {
    const specs: ClassSpec[] = [];
    for (const name of names) {
      const spec = this.spec(name);
      specs.push(spec);
      const pace = this.paceSpec(name, spec.limit);
      if (pace) specs.push(pace);
      const cap = this.capSpec(app, name);
      if (cap) specs.push(cap);
    }
    const cap = names.includes('key') ? this.activeMinuteCap(now) : null;
    if (cap) specs.push(this.minuteCapSpec(cap));
    return specs;
  }

  /**
   * What headroomFor(app, classes) would read now, for a caller that reads them in a round trip
   * of its own (upstream-follower.ts, after an answer); null while who competes must be read
   * first (then headroomFor reads it).
   */
  headroomReads(app: string, classes: readonly LimitClassName[]): ClassSpec[] | null {
    if (classes.length === 0 || this.fair.refreshPlan(classes)) return null;
    return this.headroomSpecs(app, classes, this.clock.now());
  }

  /**
   * headroomFor() from states read by the caller (by log name) instead of a store read, with the
   * limits in force now; undefined when a log it needs was not read.
   */
  headroomForFrom(
    app: string,
    classes: readonly LimitClassName[],
    read: ReadonlyMap<string, LimitClassState>,
  ): (Headroom & { limitClass: LimitClassName }) | null | undefined {
    const now = this.clock.now();
    if (classes.length === 0 || this.fair.refreshPlan(classes)) return undefined;
    const specs = this.headroomSpecs(app, classes, now);
    const states: LimitClassState[] = [];
    for (const spec of specs) {
      const state = read.get(spec.name);
      if (!state) return undefined;
      states.push(state);
    }
    return tightest(classes, this.headroomFrom(app, classes, specs, states, now));
  }

  /** Headroom per class from the states of its logs (headroomSpecs, in that order). */
  private headroomFrom(
    app: string,
    names: readonly LimitClassName[],
    specs: ClassSpec[],
    states: readonly (LimitClassState | undefined)[],
    now: number,
  ): Partial<Record<LimitClassName, Headroom>> {
    const out: Partial<Record<LimitClassName, Headroom>> = {};
    // One view per store class (a class's log may bound several of the names).
    const all = specs.map((spec, i) => {
      const state = states[i];
      return { spec, state, view: state && this.view(spec, state, now) };
    });
    for (const name of names) {
      const related = all.filter(({ spec: { cls } }) =>
        cls.kind === 'minute' ? name === 'key' : cls.cls === name,
      );
      const classView = related.find((r) => r.spec.cls.kind === 'class')?.view;
      const paceView = related.find((r) => r.spec.cls.kind === 'pace')?.view;
      const atOnce = this.atOnceBelow(name, app);
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

  /** The tightest of these classes for the app (fewest remaining; the first on a tie); null for none. */
  async headroomFor(
    app: string,
    classes: LimitClassName[],
  ): Promise<(Headroom & { limitClass: LimitClassName }) | null> {
    if (classes.length === 0) return null;
    return tightest(classes, await this.headroomOf(app, classes));
  }

  /** Records one of this replica's slots; forgets those that have left their window. */
  remember(spec: ClassSpec, id: string, now: number): void {
    // One minute log is kept: the last one remembered. The others are dropped when it changes,
    // not looked for on every take (every key call remembers its minute).
    if (spec.cls.kind === 'minute' && spec.name !== this.ownMinute) {
      for (const name of this.ownSlots.keys())
        if (decodeStoreClass(name)?.kind === 'minute' && name !== spec.name) this.ownSlots.delete(name);
      this.ownMinute = spec.name;
    }
    let own = this.ownSlots.get(spec.name);
    if (!own) {
      own = new Map();
      this.ownSlots.set(spec.name, own);
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
    this.ownSlots.get(name)?.delete(id);
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

  /**
   * Every store class one call takes: its classes, their pacing, the app's cap and share, the
   * minute cap. The classes in `atOnce` are taken at once (their log less the reserve, their
   * pacing log recording only); the others paced.
   */
  specsFor(
    w: { app: string; classes: LimitClassName[] },
    atOnce: ReadonlySet<LimitClassName> = new Set(),
  ): ClassSpec[] {
    const specs: ClassSpec[] = [];
    for (const c of w.classes) {
      const spec = this.spec(c);
      const pace = this.paceSpec(c, spec.limit);
      const below = atOnce.has(c)
        ? startsAtOnceBelow(spec.limit, this.classes[c].burst, this.classes[c].reserve)
        : null;
      if (pace && below !== null) {
        specs.push(classSpec(spec.cls, below, spec.windowMs), { ...pace, limit: RECORD_ONLY });
      } else {
        specs.push(spec);
        if (pace) specs.push(pace);
      }
      const cap = this.capSpec(w.app, c);
      if (cap) specs.push(cap);
      specs.push(this.fair.spec(c, w.app, spec.limit));
    }
    const minute = w.classes.includes('key') ? this.activeMinuteCap(this.clock.now()) : null;
    if (minute) specs.push(this.minuteCapSpec(minute));
    return specs;
  }

  /**
   * The ways a waiter's take can succeed, for estimates: paced, and at once for the classes that
   * may start so (their pacing log, which only records then, left out).
   */
  pathsFor(w: { app: string; classes: LimitClassName[] }): ClassSpec[][] {
    // The minute cap as it will be once the calls it counted as in flight have answered (they
    // answer within an upstream timeout, and show they were counted: upstream-follower.ts).
    const uncounted = this.minuteCap?.uncounted ?? 0;
    const expected = (specs: ClassSpec[]) =>
      uncounted > 0
        ? specs.map((s) => (s.cls.kind === 'minute' ? { ...s, limit: s.limit + uncounted } : s))
        : specs;
    const paced = expected(this.specsFor(w));
    const atOnce = new Set(w.classes.filter((c) => this.atOnceBelow(c, w.app) !== null));
    if (atOnce.size === 0) return [paced];
    const quick = this.specsFor(w, atOnce).filter((s) => s.limit < RECORD_ONLY || s.cls.kind !== 'pace');
    return [paced, expected(quick)];
  }

  /**
   * The classes of this call that may start at once now: pacing on, a reserve below the limit, no
   * other app competing, and the class's log not known to be down to its reserve.
   */
  atOnceClasses(w: { app: string; classes: LimitClassName[] }, now: number): Set<LimitClassName> {
    const out = new Set<LimitClassName>();
    for (const c of w.classes)
      if (this.atOnceBelow(c, w.app) !== null && (this.lowUntil.get(c) ?? 0) <= now) out.add(c);
    return out;
  }

  /** A take at once was refused by the class (it is down to its reserve) until `until`. */
  downToReserve(c: LimitClassName, until: number): void {
    this.lowUntil.set(c, until);
  }

  /** Slots of the class were given back: a take at once may succeed again. */
  slotsReturned(c: LimitClassName): void {
    this.lowUntil.delete(c);
  }

  /** Below how many starts in its window the class starts the app's call at once (null: paced). */
  private atOnceBelow(c: LimitClassName, app: string): number | null {
    const cfg = this.classes[c];
    const below = startsAtOnceBelow(this.spec(c).limit, cfg.burst, cfg.reserve);
    return below !== null && !this.fair.competing(c, app) ? below : null;
  }

  /** The pacing log of a class (at most `burst` starts per burst * window / limit), or null when off. */
  private paceSpec(c: LimitClassName, limit: number): ClassSpec | null {
    const cfg = this.classes[c];
    const pace = paceOf(limit, cfg.windowMs, cfg.burst);
    return pace ? classSpec({ kind: 'pace', cls: c }, pace.limit, pace.windowMs) : null;
  }

  spec(name: LimitClassName): ClassSpec {
    const c = this.classes[name];
    // The log keeps each start for the window and the edge margin (limit-classes.ts).
    const limit = name === 'key' ? this.keyLimit : c.limit;
    return classSpec({ kind: 'class', cls: name }, limit, c.windowMs + c.edgeMarginMs);
  }

  /** The app's own cap on a class, or null when it has none. */
  capSpec(app: string, c: LimitClassName): ClassSpec | null {
    const cap = this.capOf(app, c);
    return cap === undefined ? null : classSpec({ kind: 'cap', cls: c, app }, cap, this.classes[c].windowMs);
  }

  /** This replica's slots still in a window, with their classes (copied into the local log on an outage). */
  *ownSlotsNow(): Iterable<OwnSlot> {
    for (const [name, slots] of this.ownSlots) {
      const c = decodeStoreClass(name);
      if (!c) continue;
      const windowMs =
        c.kind === 'minute'
          ? this.minuteCapWindowMs()
          : c.kind === 'class'
            ? this.spec(c.cls).windowMs
            : this.classes[c.cls].windowMs;
      for (const [id, at] of slots) yield { spec: { name, limit: 0, windowMs }, id, at };
    }
  }

  /**
   * How a class looks now. Drops this replica's slots that have left the window (the oldest are
   * first: insertion order is time order) and keeps the rest as they are; the list of their
   * expiries, which only an estimate needs, is built when it is first read.
   */
  view(spec: ClassSpec, state: LimitClassState, now: number): BookView {
    const own = this.ownSlots.get(spec.name);
    const minute = spec.cls.kind === 'minute';
    const windowMs =
      minute && this.minuteCap
        ? Math.max(1, this.minuteCap.resetAtMs + this.resetMarginMs - now)
        : spec.windowMs;
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
    const limit = this.store.limitOf?.(spec) ?? spec.limit;
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

  minuteCapWindowMs(): number {
    return 2 * this.classes.key.windowMs + this.resetMarginMs;
  }

  minuteCapSpec(cap: MinuteCap): ClassSpec {
    return classSpec({ kind: 'minute', resetAtMs: cap.resetAtMs }, cap.limit, this.minuteCapWindowMs());
  }

  activeMinuteCap(now: number): MinuteCap | null {
    const cap = this.minuteCap;
    if (cap && now >= cap.resetAtMs + this.resetMarginMs) this.minuteCap = null;
    return this.minuteCap;
  }

  /**
   * Keeps the cap of the newest upstream minute worked out from the upstream's newest count (the
   * lowest Remaining); between two of the same Remaining, the lower. true when it changed.
   *
   * Not simply the lowest cap: each cap counts this replica's calls still in flight as not yet
   * counted upstream, which is safe but, in a burst, far too low (20 calls in flight take 19
   * from the minute until it resets). A later answer, with fewer calls in flight, corrects it.
   */
  mergeMinuteCap(cap: MinuteCap): boolean {
    const current = this.activeMinuteCap(this.clock.now());
    if (current && current.resetAtMs > cap.resetAtMs) return false;
    if (current && current.resetAtMs === cap.resetAtMs) {
      const was = current.remaining ?? Number.POSITIVE_INFINITY;
      const now = cap.remaining ?? Number.POSITIVE_INFINITY;
      if (now > was) return false;
      if (now === was) {
        // The same answer refined by its replica (a call in flight then has shown it was counted).
        const refined =
          cap.by !== undefined && cap.by === current.by && (cap.uncounted ?? 0) < (current.uncounted ?? 0);
        if (!refined && current.limit <= cap.limit) return false;
      }
    }
    this.minuteCap = cap;
    return true;
  }

  capOf(app: string, c: LimitClassName): number | undefined {
    return this.apps.get(app)?.caps?.[c];
  }

  weightOf(app: string): number {
    return this.apps.get(app)?.weight ?? 1;
  }

  priorityOf(app: string): number {
    return this.apps.get(app)?.priority ?? 0;
  }
}

/** The class with the fewest remaining (the first on a tie); null for none. */
function tightest(
  classes: readonly LimitClassName[],
  all: Partial<Record<LimitClassName, Headroom>>,
): (Headroom & { limitClass: LimitClassName }) | null {
  let best: (Headroom & { limitClass: LimitClassName }) | null = null;
  for (const name of classes) {
    const h = all[name];
    if (h && (!best || h.remaining < best.remaining)) best = { ...h, limitClass: name };
  }
  return best;
}

/** Starts a class view has room for now (0 while paused or at its limit). */
function roomOf(view: ClassView): number {
  return view.pausedForMs > 0 ? 0 : Math.max(0, view.limit - view.used);
}
