// The rate governor: decides when a gateway request may call the upstream so that, across all
// replicas, no class ever sees more than its limit of calls in any window (the Store's sliding
// log, taken atomically for every class a call needs), waiting requests are served fairly
// between apps (fair-queue.ts), and a request that cannot start before its deadline is refused at
// once. The limits follow what the upstream reports: upstream-follower.ts does that (observe).
//
// A refusal is a value (Denial); exceptions are faults only (StoreUnavailableError from the
// Store reaches the caller unchanged). Must never: grant a call without the Store's atomic take,
// call Date.now() (the injected clock only), or hold a slot for a call that never left the
// gateway once the caller says so (release(false)).
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { RouteName } from '../route-table.ts';
import type { BusStore, LimitClassSpec, LimitClassState, SlotStore, TakeResult } from '../store/store.ts';
import { type AppLimits, baseClassOf, ClassBook, type Headroom, isAppClass } from './class-book.ts';
import { FairQueue } from './fair-queue.ts';
import { FairShare } from './fair-share.ts';
import { type GovernorState, readGovernorState } from './governor-state.ts';
import {
  type LimitClassConfig,
  type LimitClassName,
  limitClassesWith,
  routeClasses,
} from './limit-classes.ts';
import { type ClassView, startEstimateMs } from './slot-estimate.ts';
import { UpstreamFollower } from './upstream-follower.ts';
import { type DenialReason, WaitStats } from './wait-stats.ts';

export type { AppLimits, Headroom } from './class-book.ts';
export type { GovernorState } from './governor-state.ts';
export type { DenialReason } from './wait-stats.ts';

export interface RateGovernorOptions {
  /** Slots for the takes, the bus for limit changes seen by other replicas. */
  store: SlotStore & BusStore;
  clock: Clock;
  /**
   * Overrides of the spec defaults (limit, windowMs, maxWaitMs, burst) per class. A `key` limit
   * given here is a ceiling: the upstream's X-RateLimit-Limit may lower it, never raise it.
   */
  classes?: Partial<Record<LimitClassName, Partial<Omit<LimitClassConfig, 'name'>>>>;
  /** Apps not listed get weight 1, priority 0 and no caps. */
  apps?: AppLimits[];
  defaults?: { maxWaitMs?: Partial<Record<LimitClassName, number>> };
  /** Waits `ms` or until `signal` aborts (resolves either way). Default: a timer. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Default Math.random; the jitter source. */
  random?: () => number;
  /** Up to this much is added to each retry so replicas do not retry in lockstep. Default 20. */
  jitterMs?: number;
  /** Longest sleep between tries while waiting (notices slots other replicas give back). Default 1000. */
  pollMs?: number;
  /** Pause after a 429 rate_limited without a usable Retry-After. Default 1000. */
  fallbackPauseMs?: number;
  /** Longest pause an upstream header may impose. Default 600000. */
  maxPauseMs?: number;
  /** How stale the cross-replica list of waiting apps may be (fair-share.ts). Default 100. */
  fairRefreshMs?: number;
  /** Kept after X-RateLimit-Reset in case the upstream's clock runs behind ours. Default 1000. */
  resetMarginMs?: number;
  /** Faults met in the background (a failed retry, a lost broadcast). Default: process.emitWarning. */
  onError?: (error: unknown) => void;
}

export interface AcquireRequest {
  app: string;
  route: RouteName;
  /** X-Max-Wait-Ms; the route class's default when absent. */
  maxWaitMs?: number;
  /** The client went away: the request leaves the queue. */
  signal?: AbortSignal;
}

export interface Permit {
  ok: true;
  waitedMs: number;
  classes: LimitClassName[];
  /** true: the call reached the upstream (the slot stays spent); false: give the slots back. */
  release(sentUpstream: boolean): Promise<void>;
}

export interface Denial {
  ok: false;
  /** The class that refused ("search", "key", ...). */
  limit: LimitClassName;
  /** When trying again can succeed, from now. */
  retryAfterMs: number;
  reason: DenialReason;
}

interface Waiter {
  readonly app: string;
  readonly id: string;
  readonly classes: LimitClassName[];
  readonly deadline: number;
  readonly enqueuedAt: number;
  readonly queue: Line;
  readonly resolve: (result: Permit | Denial) => void;
  readonly reject: (error: unknown) => void;
  detach?: () => void;
  /** The store classes of the latest take (what a permit gives back). */
  specs?: LimitClassSpec[];
  done: boolean;
}

/** One waiting line per set of classes (key / search+key / check+key / suggest). */
interface Line {
  readonly classes: LimitClassName[];
  readonly fq: FairQueue<Waiter>;
  readonly blockedApps: Map<string, number>;
  /** Per store class: when its next slot frees, from the latest refusal (absolute ms). */
  readonly nextFreeAt: Map<string, number>;
  running: boolean;
  napping: 'class' | 'caps' | null;
  /** The class (not an app's own cap) that refused this line last. */
  lastRefusedBy?: string;
  wake: AbortController;
}

const defaultSleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal.addEventListener('abort', done, { once: true });
  });

export class RateGovernor {
  private readonly store: SlotStore & BusStore;
  private readonly clock: Clock;
  private readonly book: ClassBook;
  private readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  private readonly random: () => number;
  private readonly jitterMs: number;
  private readonly pollMs: number;
  private readonly resetMarginMs: number;
  private readonly fairRefreshMs: number;
  private readonly onError: (error: unknown) => void;
  private readonly instance = randomUUID().slice(0, 8);
  private readonly lines = new Map<string, Line>();
  private readonly stats = new WaitStats();
  private readonly fair: FairShare;
  private readonly follower: UpstreamFollower;
  private keyInFlight = 0;
  private seq = 0;
  private closed = false;

  constructor(options: RateGovernorOptions) {
    this.store = options.store;
    this.clock = options.clock;
    const withWaits = { ...options.classes };
    for (const [name, ms] of Object.entries(options.defaults?.maxWaitMs ?? {})) {
      const n = name as LimitClassName;
      withWaits[n] = { ...withWaits[n], maxWaitMs: ms };
    }
    const classes = limitClassesWith(withWaits);
    this.sleep = options.sleep ?? defaultSleep;
    this.random = options.random ?? Math.random;
    this.jitterMs = options.jitterMs ?? 20;
    this.pollMs = options.pollMs ?? 1000;
    this.resetMarginMs = options.resetMarginMs ?? 1000;
    this.fairRefreshMs = options.fairRefreshMs ?? 100;
    this.onError = options.onError ?? ((e) => process.emitWarning(e instanceof Error ? e : String(e)));
    const weights = new Map((options.apps ?? []).map((a) => [a.name, a.weight ?? 1]));
    this.fair = new FairShare({
      store: this.store,
      now: () => this.clock.now(),
      instance: this.instance,
      refreshMs: this.fairRefreshMs,
      windowOf: (c) => classes[c].windowMs,
      weightOf: (app) => weights.get(app) ?? 1,
      knownApps: () => [...new Set([...weights.keys(), ...this.stats.names()])],
      onError: this.onError,
    });
    this.book = new ClassBook(
      this.store,
      this.clock,
      classes,
      options.apps ?? [],
      this.fair,
      this.resetMarginMs,
      options.classes?.key?.limit,
    );
    this.follower = new UpstreamFollower({
      store: this.store,
      clock: this.clock,
      book: this.book,
      instance: this.instance,
      resetMarginMs: this.resetMarginMs,
      fallbackPauseMs: options.fallbackPauseMs ?? 1000,
      maxPauseMs: options.maxPauseMs ?? 600_000,
      keyCallsInFlight: () => this.keyInFlight,
      onChange: () => this.wakeAll(),
      onError: this.onError,
    });
  }

  /** How long a call of this route may wait in the queue: `requested`, else its class default. */
  maxWaitFor(route: RouteName, requested?: number): number {
    const primary = routeClasses(route)[0];
    if (!primary) return 0;
    return Math.max(0, requested ?? this.book.classes[primary].maxWaitMs);
  }

  /** Waits for a start within the deadline, or says at once why it cannot have one. */
  async acquire(request: AcquireRequest): Promise<Permit | Denial> {
    if (this.closed) throw new Error('RateGovernor is closed');
    const classes = routeClasses(request.route);
    const start = this.clock.now();
    const primary = classes[0];
    if (!primary) return { ok: true, waitedMs: 0, classes, release: async () => {} };
    if (request.signal?.aborted) return this.deny(request.app, primary, 0, 'aborted');
    const maxWait = this.maxWaitFor(request.route, request.maxWaitMs);
    const line = this.lineFor(classes);
    let resolve!: (r: Permit | Denial) => void;
    let reject!: (e: unknown) => void;
    const result = new Promise<Permit | Denial>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const waiter: Waiter = {
      app: request.app,
      id: `${this.instance}:${++this.seq}`,
      classes,
      deadline: start + maxWait,
      enqueuedAt: start,
      queue: line,
      resolve,
      reject,
      done: false,
    };

    if (line.fq.size === 0) {
      // Nobody waits for these classes here: try at once (one Store round trip).
      const taken = await this.take(waiter);
      if (taken.ok) {
        if (request.signal?.aborted) {
          await this.giveBack(waiter);
          return this.deny(request.app, primary, 0, 'aborted');
        }
        return this.permit(waiter);
      }
      this.noteRefusal(line, taken);
      if (isAppClass(taken.name)) line.blockedApps.set(waiter.app, this.clock.now() + taken.retryAfterMs);
      line.fq.push(waiter);
      this.markWaiting(line, taken.name);
    } else {
      // Others wait here already: say at once that this app waits too, so other replicas'
      // apps over their share leave the next free slot to it (fair-share.ts).
      line.fq.push(waiter);
      if (line.lastRefusedBy) this.markWaiting(line, line.lastRefusedBy, waiter.app);
    }

    const hopeless = await this.estimate(line, [waiter]).catch((error: unknown) => {
      line.fq.remove(waiter);
      throw error;
    });
    const verdict = hopeless.get(waiter);
    if (verdict) {
      line.fq.remove(waiter);
      this.afterLeave(waiter);
      return this.deny(waiter.app, verdict.limit, verdict.retryAfterMs, verdict.reason);
    }
    if (request.signal) {
      const signal = request.signal;
      const onAbort = () => this.finish(waiter, this.deny(waiter.app, primary, 0, 'aborted'));
      signal.addEventListener('abort', onAbort, { once: true });
      waiter.detach = () => signal.removeEventListener('abort', onAbort);
      if (signal.aborted) onAbort();
    }
    // A line asleep because every waiting app is at its cap may now have someone to serve.
    if (line.napping === 'caps') line.wake.abort();
    void this.pump(line);
    return result;
  }

  /**
   * Follows an upstream answer: X-RateLimit-Limit (the key allotment), X-RateLimit-Remaining
   * with X-RateLimit-Reset (no more key calls than that until the reset) and a 429 with
   * Retry-After in seconds (pauses the route's class). `errorCode` is the upstream error code
   * of a 429 body when known; `quota_exceeded` is a tariff quota, not a rate, and is ignored.
   * Call it before release(true) of the same call.
   */
  async observe(
    route: RouteName,
    status: number,
    headers: Record<string, string | undefined>,
    errorCode?: string,
  ): Promise<void> {
    await this.follower.observe(route, status, headers, errorCode);
  }

  /** What the app may still use now, per class (for X-RateLimit-* on the gateway's answers). */
  headroom(app: string): Promise<Record<LimitClassName, Headroom>> {
    return this.book.headroom(app);
  }

  /** The tightest class of a route for this app (what X-RateLimit-* on that route shows). */
  async headroomFor(
    app: string,
    route: RouteName,
  ): Promise<(Headroom & { limitClass: LimitClassName }) | null> {
    return this.book.headroomFor(app, routeClasses(route));
  }

  /** Every class's state and queues, and every app's waits (GET /admin/limits). */
  state(): Promise<GovernorState> {
    const { store, book, fair, stats } = this;
    return readGovernorState({ now: this.clock.now(), store, book, fair, stats, lines: this.lines.values() });
  }

  /** Refuses everyone still waiting and stops. Slots of calls in flight stay until their window passes. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const line of this.lines.values()) {
      for (const w of line.fq.ordered())
        this.finish(w, this.deny(w.app, w.classes[0] ?? 'key', 0, 'shutdown'));
      line.wake.abort();
    }
    await this.fair.clearAll().catch((error: unknown) => this.onError(error));
    await this.follower.close();
  }

  // --- the waiting line ---

  private async pump(line: Line): Promise<void> {
    if (line.running || this.closed) return;
    line.running = true;
    try {
      while (!this.closed && line.fq.size > 0) {
        let now = this.clock.now();
        for (const w of line.fq.ordered())
          if (w.deadline < now) this.finish(w, this.denyFor(w, line, now, 'deadline'));
        const w = line.fq.peek((app) => (line.blockedApps.get(app) ?? 0) <= now);
        if (!w) {
          const blocked = [...line.blockedApps.values()].filter((t) => t > now);
          await this.nap(line, 'caps', Math.min(...blocked, ...this.deadlines(line)) - now);
          continue;
        }
        let taken: TakeResult;
        try {
          taken = await this.take(w);
        } catch (error) {
          line.fq.remove(w);
          this.fail(w, error);
          continue;
        }
        if (w.done) {
          if (taken.ok) await this.giveBack(w).catch((error: unknown) => this.onError(error));
          continue;
        }
        if (taken.ok) {
          line.fq.served(w);
          for (const [app, until] of line.blockedApps) if (until <= now) line.blockedApps.delete(app);
          this.finish(w, this.permit(w));
          continue;
        }
        now = this.clock.now();
        this.noteRefusal(line, taken);
        if (isAppClass(taken.name)) line.blockedApps.set(w.app, now + taken.retryAfterMs);
        this.markWaiting(line, taken.name);
        const hopeless = await this.estimate(line, line.fq.ordered()).catch((error: unknown) => {
          this.onError(error);
          return new Map<Waiter, never>();
        });
        for (const [h, verdict] of hopeless)
          this.finish(h, this.deny(h.app, verdict.limit, verdict.retryAfterMs, verdict.reason));
        if (!isAppClass(taken.name)) {
          const jitter = this.random() * this.jitterMs;
          const wait = Math.min(
            taken.retryAfterMs + jitter,
            this.pollMs,
            ...this.deadlines(line).map((d) => d - now),
          );
          await this.nap(line, 'class', wait);
        }
      }
    } finally {
      line.running = false;
    }
  }

  /** Just after each waiter's deadline: when the line must look again to refuse it. */
  private deadlines(line: Line): number[] {
    return line.fq.ordered().map((w) => w.deadline + 1);
  }

  private async nap(line: Line, why: 'class' | 'caps', ms: number): Promise<void> {
    line.napping = why;
    await this.sleep(Math.max(0, ms), line.wake.signal);
    line.napping = null;
    if (line.wake.signal.aborted) line.wake = new AbortController();
  }

  private wakeAll(): void {
    for (const line of this.lines.values()) line.wake.abort();
  }

  /**
   * Which of `candidates` cannot start before their deadline, by queue position and the window's
   * free-up times; the rest keep waiting. One limiterState round trip.
   */
  private async estimate(
    line: Line,
    candidates: Waiter[],
  ): Promise<Map<Waiter, { limit: LimitClassName; retryAfterMs: number; reason: DenialReason }>> {
    const out = new Map<Waiter, { limit: LimitClassName; retryAfterMs: number; reason: DenialReason }>();
    const order = line.fq.ordered();
    if (order.length === 0 || candidates.length === 0) return out;
    const specs = new Map<string, LimitClassSpec>();
    for (const w of order)
      for (const s of this.book.specsFor(w)) if (!FairShare.isShareClass(s.name)) specs.set(s.name, s);
    const list = [...specs.values()];
    const states = await this.store.limiterState(list);
    const now = this.clock.now();
    const views = new Map<string, { view: ClassView; state: LimitClassState }>();
    list.forEach((spec, i) => {
      const state = states[i];
      if (state) views.set(spec.name, { view: this.book.view(spec, state, now), state });
    });
    const wanted = new Set(candidates);
    const aheadInApp = new Map<string, number>();
    let ahead = 0;
    for (const w of order) {
      const inApp = aheadInApp.get(w.app) ?? 0;
      let worst = 0;
      let verdict: { limit: LimitClassName; retryAfterMs: number; reason: DenialReason } | null = null;
      for (const spec of this.book.specsFor(w)) {
        // A share limit lasts only while others wait; it does not decide a deadline.
        if (FairShare.isShareClass(spec.name)) continue;
        const v = views.get(spec.name);
        if (!v) continue;
        const appCap = isAppClass(spec.name);
        let at = startEstimateMs(v.view, appCap ? inApp : ahead);
        at = Math.max(at, (line.nextFreeAt.get(spec.name) ?? now) - now);
        if (at > worst || !verdict) {
          worst = at;
          const reason: DenialReason = appCap ? 'app_cap' : v.state.pausedForMs >= at ? 'paused' : 'deadline';
          verdict = { limit: baseClassOf(spec.name), retryAfterMs: at, reason };
        }
      }
      // An app blocked by its own cap or share does not go first: it is not counted ahead.
      if ((line.blockedApps.get(w.app) ?? 0) > now && !wanted.has(w)) continue;
      if (verdict && wanted.has(w) && now + worst > w.deadline) {
        out.set(w, {
          ...verdict,
          retryAfterMs: Number.isFinite(worst) ? Math.ceil(worst) : this.book.classes[verdict.limit].windowMs,
        });
      } else {
        ahead++;
        aheadInApp.set(w.app, inApp + 1);
      }
    }
    return out;
  }

  // --- slots ---

  private async take(w: Waiter): Promise<TakeResult> {
    await this.fair.refresh(w.classes);
    w.specs = this.book.specsFor(w);
    const result = await this.store.takeSlots(w.specs, w.id);
    if (result.ok) return result;
    // A share refusal lasts only while another app waits: look again soon.
    if (FairShare.isShareClass(result.name))
      return { ...result, retryAfterMs: Math.max(1, Math.min(result.retryAfterMs, this.fairRefreshMs)) };
    if (!result.name.startsWith('key~')) return result;
    // The minute cap frees at the upstream's reset, not when its (long) log window passes.
    const cap = this.book.minuteCap;
    const untilReset = cap ? cap.resetAtMs + this.resetMarginMs - this.clock.now() : result.retryAfterMs;
    return { ...result, retryAfterMs: Math.max(1, Math.min(result.retryAfterMs, untilReset)) };
  }

  private permit(w: Waiter): Permit {
    const now = this.clock.now();
    const waitedMs = Math.max(0, now - w.enqueuedAt);
    const specs = w.specs ?? this.book.specsFor(w);
    const names = specs.map((s) => s.name);
    for (const spec of specs) this.book.remember(spec, w.id, now);
    const spendsKey = w.classes.includes('key');
    if (spendsKey) this.keyInFlight++;
    this.stats.granted(w.app, waitedMs);
    let released = false;
    return {
      ok: true,
      waitedMs,
      classes: w.classes,
      release: async (sentUpstream: boolean) => {
        if (released) return;
        released = true;
        if (spendsKey) this.keyInFlight--;
        if (sentUpstream) return;
        for (const name of names) this.book.ownSlots.get(name)?.delete(w.id);
        await this.store.returnSlots(names, w.id);
        for (const line of this.lines.values())
          if (line.classes.some((c) => w.classes.includes(c))) line.wake.abort();
      },
    };
  }

  private async giveBack(w: Waiter): Promise<void> {
    await this.store.returnSlots(
      (w.specs ?? this.book.specsFor(w)).map((s) => s.name),
      w.id,
    );
  }

  /** After a refusal by a class: every app waiting in this line for it says so (fair-share.ts). */
  private markWaiting(line: Line, refusedBy: string, only?: string): void {
    if (isAppClass(refusedBy) && !FairShare.isShareClass(refusedBy)) return; // its own cap, not the class
    line.lastRefusedBy = refusedBy;
    const c = baseClassOf(refusedBy);
    const now = this.clock.now();
    for (const app of only ? [only] : Object.keys(line.fq.depthByApp())) {
      const blocked = (line.blockedApps.get(app) ?? 0) > now && !FairShare.isShareClass(refusedBy);
      if (!blocked) this.fair.markWaiting(c, app).catch((error: unknown) => this.onError(error));
    }
  }

  /** A waiter left: when its app waits for nothing more here, it leaves the waiting logs. */
  private afterLeave(w: Waiter): void {
    for (const c of w.classes) {
      let still = false;
      for (const line of this.lines.values())
        if (line.classes.includes(c) && (line.fq.depthByApp()[w.app] ?? 0) > 0) still = true;
      if (!still) this.fair.clearWaiting(c, w.app).catch((error: unknown) => this.onError(error));
    }
  }

  private noteRefusal(line: Line, refusal: { name: string; retryAfterMs: number }): void {
    line.nextFreeAt.set(refusal.name, this.clock.now() + refusal.retryAfterMs);
  }

  // --- small helpers ---

  private lineFor(classes: LimitClassName[]): Line {
    const key = classes.join('+');
    let line = this.lines.get(key);
    if (!line) {
      line = {
        classes,
        fq: new FairQueue<Waiter>({
          weightOf: (a) => this.book.weightOf(a),
          priorityOf: (a) => this.book.priorityOf(a),
        }),
        blockedApps: new Map(),
        nextFreeAt: new Map(),
        running: false,
        napping: null,
        wake: new AbortController(),
      };
      this.lines.set(key, line);
    }
    return line;
  }

  private finish(w: Waiter, result: Permit | Denial): void {
    if (w.done) return;
    w.done = true;
    w.queue.fq.remove(w);
    w.detach?.();
    this.afterLeave(w);
    w.resolve(result);
  }

  private fail(w: Waiter, error: unknown): void {
    if (w.done) return;
    w.done = true;
    w.detach?.();
    this.afterLeave(w);
    w.reject(error);
  }

  private deny(app: string, limit: LimitClassName, retryAfterMs: number, reason: DenialReason): Denial {
    this.stats.denied(app, reason);
    return { ok: false, limit, retryAfterMs: Math.max(0, Math.ceil(retryAfterMs)), reason };
  }

  private denyFor(w: Waiter, line: Line, now: number, reason: DenialReason): Denial {
    const next = Math.max(0, ...[...line.nextFreeAt.values()].map((t) => t - now));
    return this.deny(w.app, w.classes[0] ?? 'key', next, reason);
  }
}
