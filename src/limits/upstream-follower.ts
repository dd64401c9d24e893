// Follows what the upstream says about its limits, on every replica. From each upstream answer
// (upstream-signals.ts reads the headers) it sets the key limit (X-RateLimit-Limit), caps the key
// calls left in the upstream's current minute (X-RateLimit-Remaining with X-RateLimit-Reset: the
// store class key~<reset>), and starts shared pauses in the Store (Remaining 0; a 429 with
// Retry-After). A changed limit or cap goes to the other replicas over the Store's pub/sub, and
// what they send is checked and applied here.
//
// The limits themselves live in class-book.ts; after start-up this module is the only thing that
// changes them. Must never take or grant a slot (rate-governor.ts does that through the Store's
// atomic take), call Date.now() (the injected clock only), apply its own broadcast twice or let
// a malformed broadcast set a limit.
import type { Clock } from '../clock.ts';
import { copyWith } from '../object-copy.ts';
import type { RouteName } from '../route-table.ts';
import type { BusStore } from '../store/bus-store.ts';
import type { LimitClassSpec, LimitClassState, SlotStore } from '../store/slot-store.ts';
import type { ClassBook, MinuteCap } from './class-book.ts';
import { pausedClassOf, routeClasses } from './limit-classes.ts';
import { encodeStoreClass } from './store-class.ts';
import { readUpstreamSignals, type SignalOptions } from './upstream-signals.ts';

/** The pub/sub channel every replica's follower listens on. */
export const LIMITS_CHANNEL = 'limits:upstream';

/** A change of the followed limits, as one replica tells the others. */
export interface LimitsChange {
  keyLimit?: number;
  minuteCap?: MinuteCap;
}

/** What the follower reads and changes in the class book. */
export type FollowedLimits = Pick<
  ClassBook,
  | 'keyLimit'
  | 'followKeyLimit'
  | 'minuteCap'
  | 'activeMinuteCap'
  | 'mergeMinuteCap'
  | 'minuteCapWindowMs'
  | 'classes'
>;

export interface UpstreamFollowerOptions {
  /** Where pauses are set and the minute log is read (the governor's slot logs). */
  store: SlotStore;
  /** Where changes are shared with the other replicas. */
  bus: BusStore;
  clock: Clock;
  book: FollowedLimits;
  /** This replica's id: its own broadcasts come back to it and are skipped. */
  instance: string;
  /** Kept after X-RateLimit-Reset in case the upstream's clock runs behind ours. */
  resetMarginMs: number;
  /** Pause after a 429 rate_limited without a usable Retry-After. */
  fallbackPauseMs: number;
  /** Longest pause an upstream header may impose. */
  maxPauseMs: number;
  /** This replica's calls that spend `key`: granted, not yet released. */
  keyCallsInFlight(): number;
  /** Something changed (here or on another replica): waiting lines should look again. */
  onChange(): void;
  /** A lost broadcast, a bad message, a failed unsubscribe. */
  onError(error: unknown): void;
}

/**
 * The limit of the log key~<reset>: the calls already in it, less this replica's other key calls
 * still in flight (the upstream has not counted them yet, so they will spend `remaining` too),
 * plus what the upstream says is left. The call being observed is not "other" when its route
 * spends `key`: the upstream has counted it.
 */
export function minuteCapLimit(a: {
  route: RouteName;
  logged: number;
  remaining: number;
  keyCallsInFlight: number;
}): number {
  return Math.max(0, a.logged - othersInFlight(a.route, a.keyCallsInFlight) + a.remaining);
}

/** This replica's key calls in flight other than the one answered (when its route spends key). */
export function othersInFlight(route: RouteName, keyCallsInFlight: number): number {
  return Math.max(0, keyCallsInFlight - (routeClasses(route).includes('key') ? 1 : 0));
}

/**
 * An answer with an OLDER count than the cap's (a higher Remaining for the same reset) comes from
 * a call the upstream counted before the cap's own answer: when that cap is this replica's and it
 * subtracted this call as perhaps uncounted, it may allow one more. The raised cap, or null.
 */
export function countedAfterAll(
  cap: MinuteCap | null,
  answer: { resetAtMs: number; remaining: number },
  self: string,
): MinuteCap | null {
  if (!cap || cap.by !== self || cap.resetAtMs !== answer.resetAtMs) return null;
  if (cap.remaining === undefined || answer.remaining <= cap.remaining) return null;
  const uncounted = cap.uncounted ?? 0;
  if (uncounted <= 0) return null;
  return copyWith(cap, { limit: cap.limit + 1, uncounted: uncounted - 1 });
}

/** The states of these logs, by name (one store read). */
async function readStates(store: SlotStore, specs: LimitClassSpec[]): Promise<Map<string, LimitClassState>> {
  const states = await store.limiterState(specs);
  const out = new Map<string, LimitClassState>();
  specs.forEach((spec, i) => {
    const s = states[i];
    if (s) out.set(spec.name, s);
  });
  return out;
}

export function encodeLimitsChange(from: string, change: LimitsChange): string {
  return JSON.stringify({ from, ...change });
}

/**
 * Another replica's change, keeping only what is valid: a key limit that is a positive integer,
 * a minute cap with a finite reset and an integer limit (a negative one counts as 0), its
 * Remaining and uncounted calls when they are integers >= 0 and its replica id when a short
 * string. null for this replica's own message; throws on a message that is not a JSON object.
 */
export function decodeLimitsChange(message: string, self: string): LimitsChange | null {
  const m: unknown = JSON.parse(message);
  if (typeof m !== 'object' || m === null) throw new TypeError(`${LIMITS_CHANNEL}: not an object`);
  // Shapes claimed, not trusted: every field is checked before it is kept.
  const { from, keyLimit, minuteCap: cap } = m as { from?: string; keyLimit?: number; minuteCap?: MinuteCap };
  if (from === self) return null;
  const out: LimitsChange = {};
  if (typeof keyLimit === 'number' && Number.isSafeInteger(keyLimit) && keyLimit > 0) out.keyLimit = keyLimit;
  if (cap && Number.isFinite(cap.resetAtMs) && Number.isSafeInteger(cap.limit)) {
    out.minuteCap = { resetAtMs: cap.resetAtMs, limit: Math.max(0, cap.limit) };
    const count = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0;
    if (count(cap.remaining)) out.minuteCap.remaining = cap.remaining;
    if (typeof cap.by === 'string' && cap.by.length > 0 && cap.by.length <= 64) out.minuteCap.by = cap.by;
    if (count(cap.uncounted)) out.minuteCap.uncounted = cap.uncounted;
  }
  return out;
}

export class UpstreamFollower {
  private readonly signalOptions: SignalOptions;
  private readonly unsubscribe: Promise<(() => Promise<void>) | null>;
  /** What this replica's own broadcasts start with (skipped without parsing when they come back). */
  private readonly ownPrefix: string;
  /** Changes not yet published, merged; the publish in flight. */
  private unsent: LimitsChange | null = null;
  private sending: Promise<void> | null = null;

  constructor(private readonly o: UpstreamFollowerOptions) {
    this.signalOptions = {
      fallbackPauseMs: o.fallbackPauseMs,
      maxPauseMs: o.maxPauseMs,
      maxResetAheadMs: o.book.classes.key.windowMs,
    };
    this.ownPrefix = `{"from":${JSON.stringify(o.instance)},`;
    this.unsubscribe = o.bus
      .subscribe(LIMITS_CHANNEL, (message) => this.onBroadcast(message))
      .catch((error: unknown) => {
        o.onError(error);
        return null;
      });
  }

  /**
   * Applies one upstream answer here, shares what changed (off the caller's path), and wakes the
   * lines. `alsoRead`: logs the caller wants read in the same round trip as the minute log (the
   * answer's X-RateLimit-*); their states are returned, by name, when that read was made.
   * `known`: states the caller read itself since the call started (its take, at most a moment
   * ago); when they hold the minute log and every log of `alsoRead`, nothing is read. A minute
   * log counted then holds no start made since, so the cap it gives is no larger than one read now.
   */
  async observe(
    route: RouteName,
    status: number,
    headers: Record<string, string | undefined>,
    errorCode?: string,
    alsoRead: readonly LimitClassSpec[] = [],
    known?: ReadonlyMap<string, LimitClassState>,
  ): Promise<ReadonlyMap<string, LimitClassState> | null> {
    const { store, book } = this.o;
    const now = this.o.clock.now();
    const signals = readUpstreamSignals(status, headers, now, this.signalOptions, errorCode);
    let change: LimitsChange | null = null;
    let read: ReadonlyMap<string, LimitClassState> | null = null;
    if (signals.keyLimit !== undefined && book.followKeyLimit(signals.keyLimit)) {
      change = { keyLimit: book.keyLimit };
    }
    if (signals.keyRemaining) {
      const { remaining, resetAtMs } = signals.keyRemaining;
      if (remaining === 0) {
        await store.pauseClass('key', resetAtMs - now + this.o.resetMarginMs);
      } else {
        const minute = {
          name: encodeStoreClass({ kind: 'minute', resetAtMs }),
          limit: 0,
          windowMs: book.minuteCapWindowMs(),
        };
        const specs = [minute, ...alsoRead.filter((s) => s.name !== minute.name)];
        read = known && specs.every((s) => known.has(s.name)) ? known : await readStates(store, specs);
        const state = read.get(minute.name);
        const inFlight = this.o.keyCallsInFlight();
        const limit = minuteCapLimit({
          route,
          logged: state?.used ?? 0,
          remaining,
          keyCallsInFlight: inFlight,
        });
        const cap =
          countedAfterAll(book.activeMinuteCap(now), { resetAtMs, remaining }, this.o.instance) ??
          ({
            resetAtMs,
            limit,
            remaining,
            by: this.o.instance,
            uncounted: othersInFlight(route, inFlight),
          } satisfies MinuteCap);
        if (book.mergeMinuteCap(cap)) change = copyWith(change ?? {}, { minuteCap: book.minuteCap ?? cap });
      }
    }
    if (signals.pauseMs !== undefined) {
      const paused = pausedClassOf(route);
      if (paused) await store.pauseClass(paused, signals.pauseMs);
      read = null; // read before the pause
    }
    if (change) this.share(change);
    this.o.onChange();
    return read;
  }

  /**
   * Sends a change to the other replicas without waiting for it (from the next turn of the event
   * loop): at most one publish in flight;
   * changes made meanwhile are merged (the newest of each kind) and sent when it is done. The
   * other replicas keep the newest count they have seen (mergeMinuteCap), so a skipped
   * intermediate cap never leaves them a looser one than they would have had.
   */
  private share(change: LimitsChange): void {
    this.unsent = copyWith(this.unsent ?? {}, change);
    if (this.sending) return;
    this.sending = (async () => {
      // From the next turn of the event loop: the answer being observed is written first.
      await new Promise<void>((resolve) => setImmediate(resolve));
      while (this.unsent) {
        const next = this.unsent;
        this.unsent = null;
        await this.o.bus
          .publish(LIMITS_CHANNEL, encodeLimitsChange(this.o.instance, next))
          .catch((error: unknown) => this.o.onError(error));
      }
      this.sending = null;
    })();
  }

  /** Resolves when every change made so far has been published (or failed): tests, shutdown. */
  async shared(): Promise<void> {
    while (this.sending) await this.sending;
  }

  /** Stops listening to the other replicas. */
  async close(): Promise<void> {
    await this.shared();
    const unsubscribe = await this.unsubscribe;
    if (unsubscribe) await unsubscribe().catch((error: unknown) => this.o.onError(error));
  }

  private onBroadcast(message: string): void {
    if (message.startsWith(this.ownPrefix)) return;
    try {
      const change = decodeLimitsChange(message, this.o.instance);
      if (!change) return;
      if (change.keyLimit !== undefined) this.o.book.followKeyLimit(change.keyLimit);
      if (change.minuteCap) this.o.book.mergeMinuteCap(change.minuteCap);
      this.o.onChange();
    } catch (error) {
      this.o.onError(error);
    }
  }
}
