// Start verdicts: which waiters of a line cannot start before their deadline, and what they are
// told (the class that binds, when trying again can succeed, and why: deadline, app_cap, paused).
// Also how long a refusal of the Store's take really lasts for the line (a share refusal only
// while another app waits; the upstream-minute cap until the upstream's reset).
//
// Pure: the Store's state, the book's views and "now" are passed in; no clock, no I/O. Must never
// grant a slot: only the Store's atomic take does that; this only decides whether waiting can help.
import { copyWith } from '../object-copy.ts';
import type { LimitClassState } from '../store/store.ts';
import type { LimitClassName } from './limit-classes.ts';
import { type ClassView, startEstimateMs } from './slot-estimate.ts';
import { baseClassOf, type ClassSpec, type StoreClass } from './store-class.ts';
import type { DenialReason } from './wait-stats.ts';

export interface Verdict {
  limit: LimitClassName;
  retryAfterMs: number;
  reason: DenialReason;
}

export interface VerdictInput<W> {
  /** The whole line in service order. */
  order: W[];
  /** The waiters to judge (the rest are only counted ahead of them). */
  candidates: ReadonlySet<W>;
  appOf(w: W): string;
  deadlineOf(w: W): number;
  /**
   * The ways the waiter's take can succeed, each the store classes it takes (paced; and at once
   * when nobody competes): it starts by the first of them that frees.
   */
  pathsOf(w: W): ClassSpec[][];
  /** The view (with this spec's limit) and state of a store class read for this estimate. */
  viewOf(spec: ClassSpec): { view: ClassView; state: LimitClassState } | undefined;
  /** When the latest refusal of this store class frees (absolute ms), if known. */
  freesAt(spec: ClassSpec): number | undefined;
  /** The app is blocked by its own cap or share for now. */
  isBlocked(app: string): boolean;
  windowOf(c: LimitClassName): number;
  now: number;
}

/**
 * The store classes an estimate reads (once per name: a read needs only the name and window):
 * every class of every way of every waiter but the shares (hints only).
 */
export function specsToRead<W>(order: W[], pathsOf: (w: W) => ClassSpec[][]): ClassSpec[] {
  const specs = new Map<string, ClassSpec>();
  for (const w of order)
    for (const path of pathsOf(w)) for (const s of path) if (s.cls.kind !== 'share') specs.set(s.name, s);
  return [...specs.values()];
}

/** The candidates that cannot start before their deadline, each with what it is told. */
export function hopelessWaiters<W>(a: VerdictInput<W>): Map<W, Verdict> {
  const out = new Map<W, Verdict>();
  const aheadInApp = new Map<string, number>();
  let ahead = 0;
  for (const w of a.order) {
    const app = a.appOf(w);
    const inApp = aheadInApp.get(app) ?? 0;
    let worst = 0;
    let verdict: Verdict | null = null;
    // The way that frees first decides (each way's own worst class binds it).
    for (const path of a.pathsOf(w)) {
      const judged = judgePath(a, path, ahead, inApp);
      if (judged && (!verdict || judged.worst < worst)) {
        worst = judged.worst;
        verdict = judged.verdict;
      }
    }
    const wanted = a.candidates.has(w);
    // An app blocked by its own cap or share does not go first: it is not counted ahead.
    if (a.isBlocked(app) && !wanted) continue;
    if (verdict && wanted && a.now + worst > a.deadlineOf(w)) {
      const retryAfterMs = Number.isFinite(worst) ? Math.ceil(worst) : a.windowOf(verdict.limit);
      out.set(w, copyWith(verdict, { retryAfterMs }));
    } else {
      ahead++;
      aheadInApp.set(app, inApp + 1);
    }
  }
  return out;
}

/** When one way of a waiter's take can succeed (its worst class), and what that class says. */
function judgePath<W>(
  a: VerdictInput<W>,
  path: ClassSpec[],
  ahead: number,
  inApp: number,
): { worst: number; verdict: Verdict } | null {
  let worst = 0;
  let verdict: Verdict | null = null;
  for (const spec of path) {
    // A share limit lasts only while others wait; it does not decide a deadline.
    if (spec.cls.kind === 'share') continue;
    const v = a.viewOf(spec);
    if (!v) continue;
    const appCap = spec.cls.kind === 'cap';
    const estimate = startEstimateMs(v.view, appCap ? inApp : ahead);
    const at = Math.max(estimate, (a.freesAt(spec) ?? a.now) - a.now);
    if (at > worst || !verdict) {
      worst = at;
      // Paused when the pause is what binds the class (judged on the one Store reading: the
      // refusal's own time is a few ms older and would make a pause look like a full window).
      const paused = v.state.pausedForMs > 0 && v.state.pausedForMs >= estimate;
      const reason: DenialReason = appCap ? 'app_cap' : paused ? 'paused' : 'deadline';
      verdict = { limit: baseClassOf(spec.cls), retryAfterMs: at, reason };
    }
  }
  return verdict ? { worst, verdict } : null;
}

/**
 * How long a refusal really lasts for the line: a share refusal only until the list of waiting
 * apps is read again (at most fairRefreshMs); the upstream-minute cap frees at the upstream's
 * reset (`minuteResetInMs`), not when its long log window passes.
 */
export function refusalLastsMs(
  cls: StoreClass,
  retryAfterMs: number,
  o: { fairRefreshMs: number; minuteResetInMs?: number },
): number {
  if (cls.kind === 'share') return Math.max(1, Math.min(retryAfterMs, o.fairRefreshMs));
  if (cls.kind === 'minute') return Math.max(1, Math.min(retryAfterMs, o.minuteResetInMs ?? retryAfterMs));
  return retryAfterMs;
}
