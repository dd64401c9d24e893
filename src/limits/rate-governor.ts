// The rate governor's coordinator: decides when a gateway request may call the upstream so that,
// across all replicas, no class ever sees more than its limit of calls in any window (the Store's
// sliding log, taken atomically for every class a call needs), waiting requests are served fairly
// between apps, and a request that cannot start before its deadline is refused at once. The
// limits follow what the upstream reports: upstream-follower.ts does that (observe).
//
// The decisions are pure parts: waiting-line.ts (one line: who is next, who is overdue, how long
// to sleep), start-verdict.ts (who cannot start in time, and what a refusal lasts), permit.ts
// (the answers), store-class.ts (the typed store classes). This file does the I/O between them:
// the Store's takes (through slot-fallback.ts, which keeps conservative local shares while the
// Store is unreachable), the sleeps of each line's loop, and the callers' promises. A take tries
// the classes nobody else competes for at once first and paces one that is down to its reserve
// (class-book.ts says how each is taken; fair-share.ts who competes).
//
// A refusal is a value (Denial); exceptions are faults only. Must never: grant a call without an
// atomic take, take time or chance from anything but the injected Clock and Random, or hold a slot
// for a call that never left the gateway once the caller says so (release(false)).
import { randomUUID } from 'node:crypto';
import { type Clock, type Random, systemRandom, wakeSleepers } from '../clock.ts';
import type { RouteName } from '../route-table.ts';
import type { LimitClassState } from '../store/store.ts';
import { ClassBook } from './class-book.ts';
import { FairShare } from './fair-share.ts';
import type { AcquireRequest, RateGovernorOptions } from './governor-options.ts';
import { type GovernorState, readGovernorState } from './governor-state.ts';
import type { Headroom } from './headroom.ts';
import { HeadroomMemo } from './headroom-memo.ts';
import { HeadroomReader } from './headroom-reader.ts';
import { type LimitClassName, limitClassesWith, routeClasses } from './limit-classes.ts';
import { OwnSlots } from './own-slots.ts';
import { type Denial, denial, type Permit, permit } from './permit.ts';
import { SlotFallback } from './slot-fallback.ts';
import { hopelessWaiters, refusalLastsMs, specsToRead, type Verdict } from './start-verdict.ts';
import { baseClassOf, type ClassSpec, decodeStoreClass, isAppClass, type StoreClass } from './store-class.ts';
import { UpstreamFollower } from './upstream-follower.ts';
import { type DenialReason, WaitStats } from './wait-stats.ts';
import { type LineWaiter, type Refusal, WaitingLine } from './waiting-line.ts';

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

interface Waiter extends LineWaiter {
  readonly id: string;
  readonly classes: LimitClassName[];
  readonly enqueuedAt: number;
  readonly line: Line;
  readonly resolve: (result: Permit | Denial) => void;
  readonly reject: (error: unknown) => void;
  detach?: () => void;
  /** The store classes of the latest take (what a permit gives back). */
  specs?: ClassSpec[];
  /** The logs' states the granted take answered (its own classes, the minute log). */
  states?: LimitClassState[];
  done: boolean;
}

/** A waiting line and its loop's state. */
interface Line {
  readonly queue: WaitingLine<Waiter>;
  running: boolean;
  napping: 'class' | 'caps' | null;
  wake: AbortController;
}

export class RateGovernor {
  private readonly clock: Clock;
  private readonly slots: SlotFallback;
  private readonly book: ClassBook;
  private readonly own: OwnSlots;
  private readonly headroomReader: HeadroomReader;
  private readonly random: Random;
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
  private readonly weights = new Map<string, number>();
  private keyInFlight = 0;
  /** X-RateLimit-* per app and route, kept 200 ms unless something changes here. */
  private readonly headroomMemo = new HeadroomMemo(TAKE_STATES_MAX_AGE_MS);
  /** Per permit, what its take answered of the logs, with the epoch and time of its grant. */
  private readonly seen = new WeakMap<
    Permit,
    { states: ReadonlyMap<string, LimitClassState>; epoch: number; at: number }
  >();
  private seq = 0;
  private closed = false;

  constructor(options: RateGovernorOptions) {
    this.clock = options.clock;
    const withWaits = { ...options.classes };
    for (const [name, ms] of Object.entries(options.defaults?.maxWaitMs ?? {})) {
      const n = name as LimitClassName;
      withWaits[n] = { ...withWaits[n], maxWaitMs: ms };
    }
    const classes = limitClassesWith(withWaits);
    this.random = options.random ?? systemRandom;
    this.jitterMs = options.jitterMs ?? 20;
    this.pollMs = options.pollMs ?? 1000;
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
        this.wakeAll();
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
    this.follower = new UpstreamFollower({
      store: this.slots,
      bus: options.store,
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
    this.wakeAll();
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
    const skip = request.skip ?? [];
    const classes = routeClasses(request.route).filter((c) => !skip.includes(c));
    const start = this.clock.now();
    const primary = classes[0];
    if (!primary) return permit(0, classes, async () => {});
    if (this.closed) return this.deny(request.app, primary, 0, 'shutdown');
    if (request.signal?.aborted) return this.deny(request.app, primary, 0, 'aborted');
    const line = this.lineFor(classes);
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
      const refusal = await this.take(waiter);
      if (!refusal) {
        if (request.signal?.aborted) {
          await this.giveBack(waiter);
          return this.deny(request.app, primary, 0, 'aborted');
        }
        return this.grant(waiter);
      }
      if (this.closed) return this.deny(request.app, primary, 0, 'shutdown');
      q.refused(waiter.app, refusal, this.clock.now());
      q.push(waiter);
      this.markWaiting(line, refusal.cls, waiter.app);
    } else {
      // Others wait here already: say at once that this app waits too, so other replicas'
      // apps over their share leave the next free slot to it (fair-share.ts).
      q.push(waiter);
      this.joinWaiting(line, waiter.app);
    }

    const hopeless = await this.estimate(line, [waiter]).catch((error: unknown) => {
      q.remove(waiter);
      throw error;
    });
    if (waiter.done) return result; // closed meanwhile
    const verdict =
      hopeless.get(waiter) ??
      (this.closed ? { limit: primary, retryAfterMs: 0, reason: 'shutdown' as const } : null);
    if (verdict) {
      q.remove(waiter);
      this.afterLeave(waiter);
      return this.deny(waiter.app, verdict.limit, verdict.retryAfterMs, verdict.reason);
    }
    request.needed?.then(
      (needed) => {
        if (!needed) this.finish(waiter, this.deny(waiter.app, primary, 0, 'aborted'));
      },
      () => {},
    );
    if (request.signal) {
      const signal = request.signal;
      const onAbort = () => this.finish(waiter, this.deny(waiter.app, primary, 0, 'aborted'));
      signal.addEventListener('abort', onAbort, { once: true });
      waiter.detach = () => signal.removeEventListener('abort', onAbort);
      if (signal.aborted) onAbort();
    }
    // A line asleep because every waiting app is at its cap may now have someone to serve.
    if (line.napping === 'caps') wake(line);
    void this.pump(line);
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
    const seen = of ? this.seen.get(of) : undefined;
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
    const lines = [...this.lines.values()].map((l) => l.queue);
    return readGovernorState({ now: this.clock.now(), store: slots, book, fair, stats, lines });
  }

  /** Refuses everyone still waiting and stops. Slots of calls in flight stay until their window passes. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const line of this.lines.values()) {
      for (const w of line.queue.ordered())
        this.finish(w, this.deny(w.app, w.classes[0] ?? 'key', 0, 'shutdown'));
      wake(line);
    }
    this.slots.close();
    await this.fair.clearAll().catch((error: unknown) => this.onError(error));
    await this.follower.close();
  }

  // --- each line's loop ---

  private async pump(line: Line): Promise<void> {
    if (line.running || this.closed) return;
    line.running = true;
    const q = line.queue;
    try {
      while (!this.closed && q.size > 0) {
        let now = this.clock.now();
        for (const w of q.overdue(now))
          this.finish(
            w,
            this.deny(w.app, w.classes[0] ?? 'key', q.lateRetryAfterMs(this.namesOf(w), now), 'deadline'),
          );
        const w = q.next(now);
        if (!w) {
          await this.nap(line, 'caps', q.blockedNapMs(now));
          continue;
        }
        let refusal: Refusal | null;
        try {
          refusal = await this.take(w);
        } catch (error) {
          q.remove(w);
          this.fail(w, error);
          continue;
        }
        if (w.done) {
          if (!refusal) await this.giveBack(w).catch((error: unknown) => this.onError(error));
          continue;
        }
        if (!refusal) {
          q.served(w, now);
          this.finish(w, this.grant(w));
          continue;
        }
        now = this.clock.now();
        q.refused(w.app, refusal, now);
        this.markWaiting(line, refusal.cls, w.app);
        const hopeless = await this.estimate(line, q.ordered()).catch((error: unknown) => {
          this.onError(error);
          return new Map<Waiter, Verdict>();
        });
        for (const [h, v] of hopeless) this.finish(h, this.deny(h.app, v.limit, v.retryAfterMs, v.reason));
        if (!isAppClass(refusal.cls)) {
          const jitter = this.random() * this.jitterMs;
          await this.nap(line, 'class', q.retryNapMs(refusal.retryAfterMs, jitter, this.pollMs, now));
        }
      }
    } finally {
      line.running = false;
    }
  }

  private async nap(line: Line, why: 'class' | 'caps', ms: number): Promise<void> {
    line.napping = why;
    await this.clock.sleep(Math.max(0, ms), line.wake.signal);
    line.napping = null;
    if (line.wake.signal.aborted) line.wake = new AbortController();
  }

  private wakeAll(): void {
    for (const line of this.lines.values()) wake(line);
  }

  /** Which of `candidates` cannot start before their deadline (start-verdict.ts); one Store read. */
  private async estimate(line: Line, candidates: Waiter[]): Promise<Map<Waiter, Verdict>> {
    const order = line.queue.ordered();
    if (order.length === 0 || candidates.length === 0) return new Map();
    const paths = new Map<Waiter, ClassSpec[][]>();
    const pathsOf = (w: Waiter) => {
      const known = paths.get(w);
      if (known) return known;
      const p = this.book.pathsFor(w);
      paths.set(w, p);
      return p;
    };
    const list = specsToRead(order, pathsOf);
    const states = await this.slots.limiterState(list);
    const now = this.clock.now();
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
        return state && { view: this.own.view(spec, state, now), state };
      },
      // The minute cap's refusal lasts until the reset unless the calls it counted as in flight
      // show they were counted (it then rises): no lower bound from it while some may.
      freesAt: (spec) =>
        spec.cls.kind === 'minute' && (this.book.minuteCap?.uncounted ?? 0) > 0
          ? undefined
          : line.queue.freesAt(spec.name),
      isBlocked: (app) => line.queue.isBlocked(app, now),
      windowOf: (c) => this.book.classes[c].windowMs,
      now,
    });
  }

  // --- slots ---

  /**
   * One atomic take of every store class the waiter needs; null when granted. Classes nobody else
   * competes for are tried at once first (class-book.ts); one that is down to its reserve refuses
   * that, and the take is made again with it paced. The refusal returned is the paced take's, but
   * says to try again when the first of the two ways can succeed.
   */
  private async take(w: Waiter): Promise<Refusal | null> {
    await this.fair.refresh(w.classes);
    const atOnce = this.book.atOnceClasses(w, this.clock.now());
    let soonestMs = Number.POSITIVE_INFINITY;
    for (;;) {
      w.specs = this.book.specsFor(w, atOnce);
      // The minute log too when this call does not take it (its answer may still move the cap).
      const minute = w.classes.includes('key') ? null : this.book.activeMinuteCap(this.clock.now());
      const result = await this.slots.takeSlots(
        w.specs,
        w.id,
        minute ? [this.book.minuteCapSpec(minute)] : [],
      );
      if (result.ok) {
        w.states = result.states;
        return null;
      }
      const cls: StoreClass = decodeStoreClass(result.name) ?? { kind: 'class', cls: w.classes[0] ?? 'key' };
      if (cls.kind === 'class' && atOnce.delete(cls.cls)) {
        // Down to its reserve: pacing engages for this class until its log frees a slot.
        this.book.downToReserve(cls.cls, this.clock.now() + result.retryAfterMs);
        soonestMs = Math.min(soonestMs, result.retryAfterMs);
        continue;
      }
      const cap = this.book.minuteCap;
      const retryAfterMs = refusalLastsMs(cls, result.retryAfterMs, {
        fairRefreshMs: this.fairRefreshMs,
        minuteResetInMs: cap ? cap.resetAtMs + this.resetMarginMs - this.clock.now() : undefined,
      });
      return { cls, name: result.name, retryAfterMs: Math.min(retryAfterMs, soonestMs) };
    }
  }

  private grant(w: Waiter): Permit {
    const epoch = this.headroomMemo.changed();
    const now = this.clock.now();
    const waitedMs = Math.max(0, now - w.enqueuedAt);
    const specs = w.specs ?? this.book.specsFor(w);
    const names = specs.map((s) => s.name);
    for (const spec of specs) this.own.remember(spec, w.id, now);
    const spendsKey = w.classes.includes('key');
    if (spendsKey) this.keyInFlight++;
    this.stats.granted(w.app, waitedMs);
    const giveBack = async (back: string[], classes: LimitClassName[]) => {
      this.headroomMemo.changed();
      for (const name of back) this.own.forget(name, w.id);
      for (const c of classes) this.book.slotsReturned(c);
      await this.slots.returnSlots(back, w.id);
      for (const line of this.lines.values())
        if (line.queue.classes.some((c) => classes.includes(c))) wake(line);
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

  private async giveBack(w: Waiter): Promise<void> {
    this.headroomMemo.changed();
    for (const c of w.classes) this.book.slotsReturned(c);
    await this.slots.returnSlots(this.namesOf(w), w.id);
  }

  private namesOf(w: Waiter): string[] {
    return (w.specs ?? this.book.specsFor(w)).map((s) => s.name);
  }

  /**
   * After a refusal of `app`'s take (fair-share.ts), an app counts as waiting for the class that
   * holds it back, and only for that one. By a class itself (its log, pacing, the minute cap):
   * every app waiting in this line says it waits for that class, except one held back by its own
   * share or cap. By the app's own share: that app alone says so. Either way they leave the
   * waiting logs of the line's other classes (unless another of their waiters still wants them):
   * a search held back by the search class or its own search share cannot use a key slot, and its
   * mark kept every other app to a share of a key class it left unused (soak, six apps: the key
   * class ran at 53-55 of 60 a minute, every other app refused by its key share).
   */
  private markWaiting(line: Line, refusedBy: StoreClass, app: string): void {
    if (isAppClass(refusedBy)) {
      if (refusedBy.kind === 'share') {
        this.fair.markWaiting(refusedBy.cls, app).catch((error: unknown) => this.onError(error));
      }
      this.leaveOtherClasses(line, app, refusedBy.cls);
      return;
    }
    const q = line.queue;
    q.lastRefusedBy = refusedBy;
    this.headroomMemo.changed(); // who competes may change: pacing, and so X-RateLimit-Remaining
    const c = baseClassOf(refusedBy);
    const now = this.clock.now();
    // Waiting for the upstream's minute cap is not competing for the class (it does not pace).
    const competes = refusedBy.kind !== 'minute';
    for (const other of Object.keys(q.depthByApp())) {
      if (other !== app && q.isBlocked(other, now)) continue;
      this.fair.markWaiting(c, other, competes).catch((error: unknown) => this.onError(error));
      this.leaveOtherClasses(line, other, c);
    }
  }

  /** Joining a line others already wait in: this app says it waits for what holds the line back. */
  private joinWaiting(line: Line, app: string): void {
    const by = line.queue.lastRefusedBy;
    if (by && !isAppClass(by))
      this.fair
        .markWaiting(baseClassOf(by), app, by.kind !== 'minute')
        .catch((error: unknown) => this.onError(error));
  }

  /** The app is held back in this line by `held`: it leaves the waiting logs of the line's other classes it wants nowhere else. */
  private leaveOtherClasses(line: Line, app: string, held: LimitClassName): void {
    const now = this.clock.now();
    for (const c of line.queue.classes) {
      if (c === held) continue;
      let still = false;
      for (const other of this.lines.values())
        if (
          other !== line &&
          other.queue.classes.includes(c) &&
          other.queue.has(app) &&
          !other.queue.isBlocked(app, now)
        )
          still = true;
      if (!still) this.fair.clearWaiting(c, app).catch((error: unknown) => this.onError(error));
    }
  }

  /** A waiter left: when its app waits for nothing more here, it leaves the waiting logs. */
  private afterLeave(w: Waiter): void {
    for (const c of w.classes) {
      let still = false;
      for (const line of this.lines.values())
        if (line.queue.classes.includes(c) && line.queue.has(w.app)) still = true;
      if (!still) this.fair.clearWaiting(c, w.app).catch((error: unknown) => this.onError(error));
    }
  }

  // --- small helpers ---

  private lineFor(classes: LimitClassName[]): Line {
    const key = classes.join('+');
    let line = this.lines.get(key);
    if (!line) {
      const queue = new WaitingLine<Waiter>(classes, {
        weightOf: (a) => this.book.weightOf(a),
        priorityOf: (a) => this.book.priorityOf(a),
      });
      line = { queue, running: false, napping: null, wake: new AbortController() };
      this.lines.set(key, line);
    }
    return line;
  }

  private finish(w: Waiter, result: Permit | Denial): void {
    if (w.done) return;
    this.headroomMemo.changed();
    w.done = true;
    w.line.queue.remove(w);
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
    return denial(limit, retryAfterMs, reason);
  }
}

function localModeMessage(local: boolean, cause?: unknown): string {
  if (!local) return 'rate limits: the Store answers again; the shared rate budget is back in force';
  const why = cause instanceof Error ? cause.message : String(cause);
  return `rate limits: the Store is unreachable (${why}); conservative local rate shares in force`;
}

/** Wakes a line's nap (every answer wakes every line). */
function wake(line: { wake: AbortController }): void {
  wakeSleepers(line.wake);
}
