// A store fault on a paid call's path is waited out, not passed on (issue 31 item 2): a Redis
// Cluster master failover or a PostgreSQL restart takes seconds, and a request whose deadline
// has room should get its answer, not 503 store_unavailable. Retries with exponential backoff
// (50 ms doubling to 1 s) and full jitter (replicas do not come back in step), until the
// request's deadline or store.failoverWaitMs, whichever is first; then the fault is thrown as is.
//
// Only for steps that are safe to repeat: opening a charge (a second open under the same key
// replaces its hold: the budget contract) and entering the charge gate (a lock try).
//
// Must never: retry anything but StoreUnavailableError, sleep past the deadline, or read
// Date.now() (the injected clock).
import type { Clock, Random, WakeSignal } from '../clock.ts';
import { StoreUnavailableError } from '../store/store.ts';

export interface StoreRetryOptions {
  clock: Clock;
  random: Random;
  /** Absolute ms: the request's deadline. */
  deadline: number;
  /** The longest time spent waiting a fault out (store.failoverWaitMs); 0: no retry. */
  maxWaitMs: number;
  signal?: WakeSignal;
  /** Told before each wait (attempt 1 = the first failure). */
  onRetry?: (attempt: number, err: StoreUnavailableError) => void;
}

const FIRST_DELAY_MS = 50;
const MAX_DELAY_MS = 1_000;

export async function retryStoreFaults<T>(step: () => Promise<T>, o: StoreRetryOptions): Promise<T> {
  const until = Math.min(o.deadline, o.clock.now() + o.maxWaitMs);
  let cap = FIRST_DELAY_MS;
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (err) {
      if (!(err instanceof StoreUnavailableError)) throw err;
      const left = until - o.clock.now();
      if (left <= 0 || o.signal?.aborted) throw err;
      const wait = Math.min(left, Math.max(1, Math.round(o.random() * cap)));
      o.onRetry?.(attempt, err);
      await o.clock.sleep(wait, o.signal);
      if (o.signal?.aborted) throw err;
      cap = Math.min(cap * 2, MAX_DELAY_MS);
    }
  }
}
