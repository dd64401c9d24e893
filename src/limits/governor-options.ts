// What a RateGovernor is built with and what acquire() is asked: the options and their defaults
// (docs/rate-limits.md, "Configuration"). Types only.
import type { Clock, Random, WakeSignal } from '../clock.ts';
import type { RouteName } from '../route-table.ts';
import type { AppLimits } from './class-book.ts';
import type { LimitClassConfig, LimitClassName } from './limit-classes.ts';
import type { GovernorStore } from './slot-fallback.ts';

export interface RateGovernorOptions {
  /** The Store's slot logs (and its pub/sub for the upstream follower, its ping for outages). */
  store: GovernorStore;
  /** All time: now() and sleep() (the pump's waits, the outage probe). */
  clock: Clock;
  /** The jitter source. Default systemRandom. */
  random?: Random;
  /**
   * Overrides of the spec defaults (limit, windowMs, maxWaitMs, burst, reserve, edgeMarginMs) per
   * class. A `key` limit given here is a ceiling: the upstream's X-RateLimit-Limit may lower it,
   * never raise it.
   */
  classes?: Partial<Record<LimitClassName, Partial<Omit<LimitClassConfig, 'name'>>>>;
  /** Apps not listed get weight 1, priority 0 and no caps. */
  apps?: AppLimits[];
  defaults?: { maxWaitMs?: Partial<Record<LimitClassName, number>> };
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
  /**
   * While the Store is unreachable each class gets limit / expectedReplicas on this replica
   * (a class's `localLimit` overrides it). Default 2.
   */
  expectedReplicas?: number;
  /** How often an unreachable Store is probed. Default 250. */
  storeProbeMs?: number;
  /** Entered (with the fault) or left the local shares. Default: process.emitWarning. */
  onLocalMode?: (local: boolean, cause?: unknown) => void;
  /** Faults met in the background (a failed retry, a lost broadcast). Default: process.emitWarning. */
  onError?: (error: unknown) => void;
}

export interface AcquireRequest {
  app: string;
  route: RouteName;
  /** X-Max-Wait-Ms; the route class's default when absent. */
  maxWaitMs?: number;
  /** The client went away: the request leaves the queue. */
  signal?: WakeSignal;
  /**
   * Classes of the route this call is known not to spend upstream (a check known not to be
   * cold skips `check`); it then waits only for the others. Never `key` for a key-spending call.
   */
  skip?: LimitClassName[];
  /** When this resolves false the request leaves the queue (reason `aborted`): it is not needed. */
  needed?: Promise<boolean>;
}
