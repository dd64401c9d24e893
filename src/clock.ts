// Time and chance for every piece of cost, window, budget, limiter, retry and cache logic.
// Nothing in those modules may call Date.now(), setTimeout() or Math.random() directly: tests
// drive a ManualClock (and a seeded Random), so 15-minute windows, calendar budgets, 60-second
// limits, retry backoff and lock waits run in milliseconds and the same way every time.

export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /**
   * Resolves once `ms` of this clock's time has passed, or at once when `signal` aborts (it never
   * rejects: a caller that cares checks `signal.aborted` afterwards).
   */
  sleep(ms: number, signal?: WakeSignal): Promise<void>;
}

/**
 * What ends a sleep early (or a wait, or an upstream call: undici takes one as its `signal`): an
 * AbortSignal, or a Waker. Only these members are used, so none of them needs an EventTarget.
 */
export interface WakeSignal {
  readonly aborted: boolean;
  /** Why it aborted, when it says (an AbortSignal's reason; a Waker has none). */
  readonly reason?: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * A one-shot wake-up for sleeps, for code that makes and ends one on every call (a lease per
 * coalesced lead and per charge, a request's client-gone signal, an upstream call's deadline). An
 * AbortController does the same through an EventTarget: a sleep made, woken and ended through one
 * cost 8.4-9.8 us on a 2-core VM, through a Waker 1.0-1.7; an AbortController and its signal
 * alone, 6.3 us on a slower one (issue 33).
 */
export class Waker implements WakeSignal {
  private woken = false;
  private listeners: (() => void)[] | null = null;

  get aborted(): boolean {
    return this.woken;
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.woken) return;
    if (this.listeners) this.listeners.push(listener);
    else this.listeners = [listener];
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const at = this.listeners?.indexOf(listener) ?? -1;
    if (at >= 0) this.listeners!.splice(at, 1);
  }

  /** Ends every sleep waiting on it, now and later (once woken, it stays woken). */
  wake(): void {
    if (this.woken) return;
    this.woken = true;
    const listeners = this.listeners;
    this.listeners = null;
    if (listeners) for (const listener of listeners) listener();
  }
}

/** A source of uniformly distributed numbers in [0, 1) (jitter, backoff). */
export type Random = () => number;

export const systemRandom: Random = Math.random;

/** A small deterministic Random for tests (mulberry32). */
export function seededRandom(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Real-time sleep on the event loop's timers. */
export function timerSleep(ms: number, signal?: WakeSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener('abort', done, { once: true });
  });
}

export const systemClock: Clock = { now: () => Date.now(), sleep: timerSleep };

/** The reason a sleep is ended early with (sleeps resolve on abort; the reason is never read). */
const WAKE = Object.freeze({ name: 'Wake', message: 'the sleep was ended early' });

/**
 * Ends the sleeps waiting on `controller`'s signal. abort() without a reason builds a
 * DOMException (a stack trace) on every call, even on a controller already aborted; code that
 * wakes sleepers on every answer or every charged call must not pay for that.
 */
export function wakeSleepers(controller: AbortController): void {
  if (!controller.signal.aborted) controller.abort(WAKE);
}

interface Sleeper {
  wakeAt: number;
  resolve: () => void;
}

/** A clock that only moves when told to; its sleepers wake when it is moved past their time. */
export class ManualClock implements Clock {
  private readonly sleepers = new Set<Sleeper>();

  constructor(private ms: number = Date.UTC(2026, 0, 15, 9, 0, 0)) {}

  now(): number {
    return this.ms;
  }

  sleep(ms: number, signal?: WakeSignal): Promise<void> {
    if (ms <= 0 || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const sleeper: Sleeper = {
        wakeAt: this.ms + ms,
        resolve: () => {
          this.sleepers.delete(sleeper);
          signal?.removeEventListener('abort', sleeper.resolve);
          resolve();
        },
      };
      this.sleepers.add(sleeper);
      signal?.addEventListener('abort', sleeper.resolve, { once: true });
    });
  }

  /** How many sleeps are waiting for this clock to move (tests wait for a stage to park). */
  get pendingSleeps(): number {
    return this.sleepers.size;
  }

  advance(ms: number): void {
    this.set(this.ms + ms);
  }

  set(ms: number): void {
    this.ms = ms;
    for (const s of [...this.sleepers]) if (s.wakeAt <= this.ms) s.resolve();
  }
}

/** The real clock shifted by an adjustable offset (the emulator's settable clock). */
export class OffsetClock implements Clock {
  private offsetMs = 0;
  constructor(private readonly base: Clock = systemClock) {}
  now(): number {
    return this.base.now() + this.offsetMs;
  }
  sleep(ms: number, signal?: WakeSignal): Promise<void> {
    return this.base.sleep(ms, signal);
  }
  advance(ms: number): void {
    this.offsetMs += ms;
  }
  reset(): void {
    this.offsetMs = 0;
  }
  get offset(): number {
    return this.offsetMs;
  }
}
