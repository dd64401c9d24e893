// The rate governor's coordinator: decides when a gateway request may call the upstream so that,
// across all replicas, no class ever sees more than its limit of calls in any window (the Store's
// sliding log, taken atomically for every class a call needs), waiting requests are served fairly
// between apps, and a request that cannot start before its deadline is refused at once. The
// limits follow what the upstream reports: upstream-follower.ts does that (observe).
//
// This file builds the parts and answers the gateway: acquire (a first take at once when nobody
// waits here, else a place in a line), observe, headroom, state, reconfigure, close. The parts:
// governor-lines.ts (the waiting lines, each line's loop and sleeps, the callers' promises),
// admission.ts (the Store's takes and give-backs, the permits, the estimate's read),
// slot-fallback.ts (the only door to the Store's slot logs; local shares while it is unreachable),
// class-book.ts (the limits and the store classes a call takes), own-slots.ts (this replica's
// slots), headroom-reader.ts (X-RateLimit-*), fair-share.ts (who waits and competes across
// replicas), upstream-follower.ts (observe). The decisions are pure parts: waiting-line.ts,
// waiting-marks.ts, start-verdict.ts, headroom.ts, permit.ts, store-class.ts.
//
// A refusal is a value (Denial); exceptions are faults only. Must never: grant a call without an
// atomic take, take time or chance from anything but the injected Clock and Random, or hold a slot
// for a call that never left the gateway once the caller says so (release(false)).
import { randomUUID } from 'node:crypto';
import { type Clock, systemRandom } from '../clock.ts';
import type { RouteName } from '../route-table.ts';
import { Admission } from './admission.ts';
import { ClassBook } from './class-book.ts';
import { FairShare } from './fair-share.ts';
import { GovernorLines, type Waiter, wake } from './governor-lines.ts';
import type { AcquireRequest, RateGovernorOptions } from './governor-options.ts';
import { type GovernorState, readGovernorState } from './governor-state.ts';
import type { Headroom } from './headroom.ts';
import { HeadroomMemo } from './headroom-memo.ts';
import { HeadroomReader } from './headroom-reader.ts';
import { type LimitClassName, limitClassesWith, routeClasses } from './limit-classes.ts';
import { OwnSlots } from './own-slots.ts';
import { type Denial, type Permit, permit } from './permit.ts';
import { SlotFallback } from './slot-fallback.ts';
import { UpstreamFollower } from './upstream-follower.ts';
import { WaitStats } from './wait-stats.ts';

export type { SlotStore } from '../store/slot-store.ts';
export type { AppLimits } from './class-book.ts';
export type { AcquireRequest, RateGovernorOptions } from './governor-options.ts';
export type { GovernorState } from './governor-state.ts';
export type { Headroom } from './headroom.ts';
export type { Denial, Permit } from './permit.ts';
export type { GovernorStore } from './slot-fallback.ts';
export type { DenialReason } from './wait-stats.ts';

/**
 * How old what a take answered (or a headroom read) may be when it stands in for a read: another
 * replica's starts since are missed for at most this long (the headroom memo's bound too).
 */
const TAKE_STATES_MAX_AGE_MS = 200;

export class RateGovernor {
  private readonly clock: Clock;
  private readonly slots: SlotFallback;
  private readonly book: ClassBook;
  private readonly own: OwnSlots;
  private readonly headroomReader: HeadroomReader;
  private readonly admission: Admission;
  private readonly lines: GovernorLines;
  private readonly resetMarginMs: number;
  private readonly fairRefreshMs: number;
  private readonly onError: (error: unknown) => void;
  private readonly instance = randomUUID().slice(0, 8);
  private readonly stats = new WaitStats();
  private readonly fair: FairShare;
  private readonly follower: UpstreamFollower;
  private readonly weights = new Map<string, number>();
  /** X-RateLimit-* per app and route, kept 200 ms unless something changes here. */
  private readonly headroomMemo = new HeadroomMemo(TAKE_STATES_MAX_AGE_MS);
  private seq = 0;

  constructor(options: RateGovernorOptions) {
    this.clock = options.clock;
    const withWaits = { ...options.classes };
    for (const [name, ms] of Object.entries(options.defaults?.maxWaitMs ?? {})) {
      const n = name as LimitClassName;
      withWaits[n] = { ...withWaits[n], maxWaitMs: ms };
    }
    const classes = limitClassesWith(withWaits);
    this.resetMarginMs = options.resetMarginMs ?? 1000;
    this.fairRefreshMs = options.fairRefreshMs ?? 100;
    const warn = (e: unknown) => process.emitWarning(e instanceof Error ? e : String(e));
    this.onError = options.onError ?? warn;
    const onLocalMode =
      options.onLocalMode ?? ((local: boolean, cause?: unknown) => warn(localModeMessage(local, cause)));
    this.slots = new SlotFallback({
      store: options.store,
      clock: this.clock,
      classes,
      expectedReplicas: options.expectedReplicas,
      probeMs: options.storeProbeMs,
      ownSlots: () => this.own.held(),
      onModeChange: (local, cause) => {
        onLocalMode(local, cause);
        if (!local) this.fair.remark().catch((error: unknown) => this.onError(error));
        this.lines.wakeAll();
      },
    });
    const weights = this.weights;
    for (const a of options.apps ?? []) weights.set(a.name, a.weight ?? 1);
    this.fair = new FairShare({
      store: this.slots,
      now: () => this.clock.now(),
      instance: this.instance,
      refreshMs: this.fairRefreshMs,
      windowOf: (c) => classes[c].windowMs,
      weightOf: (app) => weights.get(app) ?? 1,
      knownApps: () => [...new Set([...weights.keys(), ...this.stats.names()])],
      onError: this.onError,
    });
    this.book = new ClassBook(
      this.clock,
      classes,
      options.apps ?? [],
      this.fair,
      this.resetMarginMs,
      options.classes?.key?.limit,
    );
    this.own = new OwnSlots(this.book, (spec) => this.slots.limitOf(spec));
    this.headroomReader = new HeadroomReader({
      clock: this.clock,
      store: this.slots,
      book: this.book,
      fair: this.fair,
      own: this.own,
    });
    this.admission = new Admission({
      clock: this.clock,
      slots: this.slots,
      book: this.book,
      own: this.own,
      fair: this.fair,
      memo: this.headroomMemo,
      stats: this.stats,
      fairRefreshMs: this.fairRefreshMs,
      resetMarginMs: this.resetMarginMs,
      onReturned: (classes) => this.lines.wakeFor(classes),
    });
    this.lines = new GovernorLines({
      clock: this.clock,
      random: options.random ?? systemRandom,
      jitterMs: options.jitterMs ?? 20,
      pollMs: options.pollMs ?? 1000,
      book: this.book,
      admission: this.admission,
      fair: this.fair,
      memo: this.headroomMemo,
      stats: this.stats,
      onError: this.onError,
    });
    this.follower = new UpstreamFollower({
      store: this.slots,
      bus: options.store,
      clock: this.clock,
      book: this.book,
      instance: this.instance,
      resetMarginMs: this.resetMarginMs,
      fallbackPauseMs: options.fallbackPauseMs ?? 1000,
      maxPauseMs: options.maxPauseMs ?? 600_000,
      keyCallsInFlight: () => this.admission.keyInFlight,
      onChange: () => this.lines.wakeAll(),
      onError: this.onError,
    });
  }

  /**
   * Config reload: new class limits and per-app weights, priorities and caps, all checked before
   * any is applied (a RangeError leaves everything as it was). Waiters are re-examined at once.
   */
  reconfigure(options: Pick<RateGovernorOptions, 'classes' | 'apps'>): void {
    const classes = limitClassesWith(options.classes);
    const apps = options.apps ?? [];
    for (const app of apps)
      if (app.weight !== undefined && !(app.weight > 0))
        throw new RangeError(`weight of ${app.name} must be > 0`);
    this.book.setApps(apps);
    this.weights.clear();
    for (const a of apps) this.weights.set(a.name, a.weight ?? 1);
    this.book.setClasses(classes, options.classes?.key?.limit ?? Number.POSITIVE_INFINITY);
    this.lines.wakeAll();
  }

  /** How long a call of this route may wait in the queue: `requested`, else its class default. */
  maxWaitFor(route: RouteName, requested?: number, skip: readonly LimitClassName[] = []): number {
    const primary = routeClasses(route).filter((c) => !skip.includes(c))[0];
    if (!primary) return 0;
    return Math.max(0, requested ?? this.book.classes[primary].maxWaitMs);
  }

  /** true while the Store is unreachable and this replica runs on its local shares. */
  get localMode(): boolean {
    return this.slots.isLocal;
  }

  /** Waits for a start within the deadline, or says at once why it cannot have one. */
  async acquire(request: AcquireRequest): Promise<Permit | Denial> {
    const { lines, admission } = this;
    const skip = request.skip ?? [];
    const classes = routeClasses(request.route).filter((c) => !skip.includes(c));
    const start = this.clock.now();
    const primary = classes[0];
    if (!primary) return permit(0, classes, async () => {});
    if (lines.closed) return lines.deny(request.app, primary, 0, 'shutdown');
    if (request.signal?.aborted) return lines.deny(request.app, primary, 0, 'aborted');
    const line = lines.lineFor(classes);
    const q = line.queue;
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
      deadline: start + this.maxWaitFor(request.route, request.maxWaitMs, skip),
      enqueuedAt: start,
      line,
      resolve,
      reject,
      done: false,
    };

    if (q.size === 0) {
      // Nobody waits for these classes here: try at once (one Store round trip).
      const refusal = await admission.take(waiter);
      if (!refusal) {
        if (request.signal?.aborted) {
          await admission.giveBack(waiter);
          return lines.deny(request.app, primary, 0, 'aborted');
        }
        return admission.grant(waiter);
      }
      if (lines.closed) return lines.deny(request.app, primary, 0, 'shutdown');
      q.refused(waiter.app, refusal, this.clock.now());
      q.push(waiter);
      lines.markWaiting(line, refusal.cls, waiter.app);
    } else {
      // Others wait here already: say at once that this app waits too, so other replicas'
      // apps over their share leave the next free slot to it (fair-share.ts).
      q.push(waiter);
      lines.joinWaiting(line, waiter.app);
    }

    const hopeless = await admission.estimate(q, [waiter]).catch((error: unknown) => {
      q.remove(waiter);
      throw error;
    });
    if (waiter.done) return result; // closed meanwhile
    const verdict =
      hopeless.get(waiter) ??
      (lines.closed ? { limit: primary, retryAfterMs: 0, reason: 'shutdown' as const } : null);
    if (verdict) {
      q.remove(waiter);
      lines.afterLeave(waiter);
      return lines.deny(waiter.app, verdict.limit, verdict.retryAfterMs, verdict.reason);
    }
    request.needed?.then(
      (needed) => {
        if (!needed) lines.finish(waiter, lines.deny(waiter.app, primary, 0, 'aborted'));
      },
      () => {},
    );
    if (request.signal) {
      const signal = request.signal;
      const onAbort = () => lines.finish(waiter, lines.deny(waiter.app, primary, 0, 'aborted'));
      signal.addEventListener('abort', onAbort, { once: true });
      waiter.detach = () => signal.removeEventListener('abort', onAbort);
      if (signal.aborted) onAbort();
    }
    // A line asleep because every waiting app is at its cap may now have someone to serve.
    if (line.napping === 'caps') wake(line);
    void lines.pump(line);
    return result;
  }

  /**
   * Follows an upstream answer: X-RateLimit-Limit (the key allotment), X-RateLimit-Remaining
   * with X-RateLimit-Reset (no more key calls than that until the reset) and a 429 with
   * Retry-After in seconds (pauses the route's class). `errorCode` is the upstream error code
   * of a 429 body when known; `quota_exceeded` is a tariff quota, not a rate, and is ignored.
   * Call it before release(true) of the same call. With `app`, the app's headroom on the route
   * (what headroomFor answers next) is read in the same round trip as the upstream-minute log.
   */
  async observe(
    route: RouteName,
    status: number,
    headers: Record<string, string | undefined>,
    errorCode?: string,
    app?: string,
    of?: Permit,
  ): Promise<void> {
    const before = this.headroomMemo.changed();
    const classes = routeClasses(route);
    const reads = app === undefined ? null : this.headroomReader.headroomReads(app, classes);
    // What the call's own take answered, while nothing else changed here since and it is recent:
    // then neither the minute log nor the headroom needs a read of its own (TAKE_SLOTS_READ).
    const seen = of ? this.admission.seenBy(of) : undefined;
    const now = this.clock.now();
    const known =
      seen && seen.epoch + 1 === before && now - seen.at <= TAKE_STATES_MAX_AGE_MS ? seen.states : undefined;
    const read = await this.follower.observe(route, status, headers, errorCode, reads ?? [], known);
    const after = this.headroomMemo.changed();
    if (app === undefined || !reads || !read || after !== before + 1) return;
    // Nothing else changed here while the logs were read: they hold what headroomFor would read.
    const h = this.headroomReader.headroomForFrom(app, classes, read);
    const at = read === known && seen ? seen.at : now;
    if (h !== undefined) this.headroomMemo.set(`${app}\u0000${route}`, at, h, after);
  }

  /** What the app may still use now, per class (for X-RateLimit-* on the gateway's answers). */
  headroom(app: string): Promise<Record<LimitClassName, Headroom>> {
    return this.headroomReader.headroom(app);
  }

  /** The tightest class of a route for this app (what X-RateLimit-* on that route shows). */
  async headroomFor(
    app: string,
    route: RouteName,
  ): Promise<(Headroom & { limitClass: LimitClassName }) | null> {
    return this.headroomMemo.get(`${app}\u0000${route}`, this.clock.now(), () =>
      this.headroomReader.headroomFor(app, routeClasses(route)),
    );
  }

  /**
   * headroomFor() when its memo can answer now, without a store read (the cache-hit path);
   * undefined when it cannot (the caller takes the full path, which reads and memoizes).
   */
  headroomIfKnown(
    app: string,
    route: RouteName,
  ): (Headroom & { limitClass: LimitClassName }) | null | undefined {
    return this.headroomMemo.peek(`${app}\u0000${route}`, this.clock.now(), () =>
      this.headroomReader.headroomFor(app, routeClasses(route)),
    );
  }

  /** Every class's state and queues, and every app's waits (GET /admin/limits). */
  state(): Promise<GovernorState> {
    const { slots, book, fair, stats } = this;
    const lines = this.lines.queues();
    return readGovernorState({ now: this.clock.now(), store: slots, book, fair, stats, lines });
  }

  /** Refuses everyone still waiting and stops. Slots of calls in flight stay until their window passes. */
  async close(): Promise<void> {
    if (this.lines.closed) return;
    this.lines.close();
    this.slots.close();
    await this.fair.clearAll().catch((error: unknown) => this.onError(error));
    await this.follower.close();
  }
}

function localModeMessage(local: boolean, cause?: unknown): string {
  if (!local) return 'rate limits: the Store answers again; the shared rate budget is back in force';
  const why = cause instanceof Error ? cause.message : String(cause);
  return `rate limits: the Store is unreachable (${why}); conservative local rate shares in force`;
}
