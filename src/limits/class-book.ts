// The limiter's book of classes: the limits in force and the store classes one call takes. The
// effective limits (the key's follows X-RateLimit-Limit up to a configured ceiling), the
// upstream-minute cap (X-RateLimit-Remaining), per-app weights, priorities and caps; from them,
// which store classes one call takes (the route's classes, their pacing, the app's cap and share,
// the minute cap), and the ways an estimate may see it start.
//
// Pacing engages only when needed. A class whose pacing is on is taken one of two ways:
// - at once, while no other app competes for it (fair-share.ts): the class log with its limit
//   less `reserve`, and the pacing log with no limit (it still records the start);
// - paced: the class log with its whole limit and the pacing log with `burst`.
// The class log is in both, so neither way ever lets more than the limit start in a window.
//
// What this replica took itself is own-slots.ts (accounting); what an app has left is
// headroom.ts (reporting). No Store here: no waiting and no granting (rate-governor.ts does that
// through the Store's atomic take), and no reading of upstream answers (upstream-follower.ts sets
// the key limit and the minute cap). Must never call Date.now(): every time comes from the
// injected clock.
import type { Clock } from '../clock.ts';
import { copyWith } from '../object-copy.ts';
import type { FairShare } from './fair-share.ts';
import {
  LIMIT_CLASS_NAMES,
  type LimitClassConfig,
  type LimitClassName,
  paceOf,
  startsAtOnceBelow,
} from './limit-classes.ts';
import { type ClassSpec, classSpec } from './store-class.ts';

export interface AppLimits {
  name: string;
  /** Share of a saturated class relative to other apps of the same priority. Default 1. */
  weight?: number;
  /** Strict order between apps: a higher priority is served first. Default 0. */
  priority?: number;
  /** This app's own ceiling per class, calls per the class's window (across replicas). */
  caps?: Partial<Record<LimitClassName, number>>;
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

/** A pacing log's limit when a call is taken at once: it records the start, never refuses it. */
const RECORD_ONLY = 1_000_000_000;

export class ClassBook {
  keyLimit: number;
  minuteCap: MinuteCap | null = null;
  private readonly apps = new Map<string, AppLimits>();
  /** Per class: until when its log is known to hold its limit less the reserve (a take at once fails). */
  private readonly lowUntil = new Map<LimitClassName, number>();

  constructor(
    private readonly clock: Clock,
    readonly classes: Record<LimitClassName, LimitClassConfig>,
    apps: AppLimits[],
    private readonly fair: FairShare,
    /** Kept after X-RateLimit-Reset in case the upstream's clock runs behind ours. */
    readonly resetMarginMs: number,
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
        specs.push(classSpec(spec.cls, below, spec.windowMs), copyWith(pace, { limit: RECORD_ONLY }));
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
        ? specs.map((s) => (s.cls.kind === 'minute' ? copyWith(s, { limit: s.limit + uncounted }) : s))
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
  atOnceBelow(c: LimitClassName, app: string): number | null {
    const cfg = this.classes[c];
    const below = startsAtOnceBelow(this.spec(c).limit, cfg.burst, cfg.reserve);
    return below !== null && !this.fair.competing(c, app) ? below : null;
  }

  /** The pacing log of a class (at most `burst` starts per burst * window / limit), or null when off. */
  paceSpec(c: LimitClassName, limit: number): ClassSpec | null {
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
