// One local waiting line of the governor (one per set of classes: key / search+key / check+key /
// suggest): the fair queue of its waiters, the apps blocked for a while by their own cap or share,
// and when each store class that refused this line frees again. It answers who goes next, who is
// past their deadline, how long the line's loop should sleep, and what a late refusal reports.
//
// Pure and synchronous: times are passed in ("now"), no clock, no timers, no I/O. Must never take
// or give back a slot (the governor does that through the Store) nor decide a deadline by estimate
// (start-verdict.ts does).
import { FairQueue, type FairQueueOptions } from './fair-queue.ts';
import type { LimitClassName } from './limit-classes.ts';
import { isAppClass, type StoreClass } from './store-class.ts';

export interface LineWaiter {
  readonly app: string;
  /** Absolute ms after which the waiter must not start. */
  readonly deadline: number;
}

/** A refusal of the Store's take, with its class decoded. */
export interface Refusal {
  cls: StoreClass;
  name: string;
  retryAfterMs: number;
}

export class WaitingLine<W extends LineWaiter> {
  private readonly fq: FairQueue<W>;
  private readonly blockedUntil = new Map<string, number>();
  /** Per store class name: when its next slot frees, from the latest refusal (absolute ms). */
  private readonly freeAt = new Map<string, number>();
  /** The class (not an app's own cap) that refused this line last. */
  lastRefusedBy: StoreClass | undefined;

  constructor(
    readonly classes: LimitClassName[],
    order: FairQueueOptions,
  ) {
    this.fq = new FairQueue<W>(order);
  }

  get size(): number {
    return this.fq.size;
  }

  push(w: W): void {
    this.fq.push(w);
  }

  /** Leaves without service (deadline, abort, fault). */
  remove(w: W): void {
    this.fq.remove(w);
  }

  /** Leaves with a slot; blocks that have ended are forgotten. */
  served(w: W, now: number): void {
    this.fq.served(w);
    for (const [app, until] of this.blockedUntil) if (until <= now) this.blockedUntil.delete(app);
  }

  /** Every waiter in the order it would be served if nothing blocked anyone. */
  ordered(): W[] {
    return this.fq.ordered();
  }

  depthByApp(): Record<string, number> {
    return this.fq.depthByApp();
  }

  has(app: string): boolean {
    return (this.fq.depthByApp()[app] ?? 0) > 0;
  }

  /** Waiters whose deadline has passed. */
  overdue(now: number): W[] {
    return this.fq.ordered().filter((w) => w.deadline < now);
  }

  /** The next waiter to try, skipping apps blocked by their own cap or share. */
  next(now: number): W | undefined {
    return this.fq.peek((app) => !this.isBlocked(app, now));
  }

  isBlocked(app: string, now: number): boolean {
    return (this.blockedUntil.get(app) ?? 0) > now;
  }

  /** Notes a refusal of `app`'s take: its own cap or share blocks that app only. */
  refused(app: string, refusal: Refusal, now: number): void {
    this.freeAt.set(refusal.name, now + refusal.retryAfterMs);
    if (isAppClass(refusal.cls)) this.blockedUntil.set(app, now + refusal.retryAfterMs);
  }

  /** When a store class that refused this line frees (absolute ms), if one did. */
  freesAt(name: string): number | undefined {
    return this.freeAt.get(name);
  }

  /** How long to sleep when every waiting app is blocked: until a block or a deadline ends. */
  blockedNapMs(now: number): number {
    const blocked = [...this.blockedUntil.values()].filter((t) => t > now);
    return Math.max(0, Math.min(...blocked, ...this.deadlineChecks()) - now);
  }

  /** How long to sleep after a refusal by a class: its retry plus jitter, at most pollMs or a deadline. */
  retryNapMs(retryAfterMs: number, jitterMs: number, pollMs: number, now: number): number {
    return Math.max(
      0,
      Math.min(retryAfterMs + jitterMs, pollMs, ...this.deadlineChecks().map((d) => d - now)),
    );
  }

  /**
   * What a waiter refused at its deadline is told: when the latest refusal of one of ITS store
   * classes frees (another app's cap or share says nothing about this one).
   */
  lateRetryAfterMs(names: Iterable<string>, now: number): number {
    let at = now;
    for (const name of names) at = Math.max(at, this.freeAt.get(name) ?? now);
    return at - now;
  }

  /** Just after each waiter's deadline: when the line must look again to refuse it. */
  private deadlineChecks(): number[] {
    return this.fq.ordered().map((w) => w.deadline + 1);
  }
}
