// Charge serialization per company (DESIGN.md "Cost rules"). While a charged call for an INN
// is in flight, calls for that INN that the window it opens will cover wait for it (bounded
// by their deadline) and then go free. The lock lives in the Store, so replicas serialize
// too. A dossier charge covers requisites; a requisites charge covers only requisites.
// The lock is a short lease renewed while its call runs (not sized by any caller's wait), so a
// replica that dies mid-call blocks the company for at most one lease.
// A store fault during enter() is the caller's to retry (a failover is waited out: store-retry.ts)
// with the same owner: a lock an earlier try took (its reply lost, or a fault on the window read
// after it, which gives it back when the store still answers) is found to be its own, not waited
// out for a whole lease (seen through a Redis Cluster failover: a paid read held 10 s by itself).
// The windows are read again under a lock only when they may have changed since the caller's
// read: after a wait, on a retry, with no windows from the caller, or when this replica has
// learned of a covering window since. A lock taken at the first try with the caller's read just
// made (the cache stage's, a millisecond before) goes on that read: a second read was one more
// round trip to the money store on every paid miss (0.4-0.5 ms on PostgreSQL). What it could
// still catch is another replica's charge for the company recorded and its lock released in
// between; the call then goes out as charged while the upstream charges it nothing (its window is
// open there): the estimate is held and released again, nothing is recorded twice or lost.
// On a paid miss the caller's windows may be a guess of closed while its read is still on the way
// (stages/cache.ts goOnAsClosed): the call is then sent only once that read agrees, so what the
// gate skips is the same read, not a round trip earlier. The lock is given back by the caller
// once the call's record is applied (stages/charge-gate.ts waits for ctx.settling).
// Never lets a waiter make a second paid call for what an in-flight call will pay for.
import { randomUUID } from 'node:crypto';
import { type Clock, Waker, type WakeSignal } from '../clock.ts';
import type { StateStore } from '../store/store.ts';
import { keepAlive } from './lease.ts';
import type { CompanyWindows, WindowKind, WindowTracker } from './window-tracker.ts';

export type GateResult =
  | { charged: false; windows: CompanyWindows }
  | { charged: true; windows: CompanyWindows; release(): Promise<void> };

export class ChargeWaitTimeout extends Error {
  constructor(readonly inn: string) {
    super(`a charged call for ${inn} is still in flight`);
    this.name = 'ChargeWaitTimeout';
  }
}

/** Who enters: the lock's owner, the same on every try of one request; retry from the second. */
export interface GateAttempt {
  owner: string;
  retry: boolean;
}

export interface ChargeGateOptions {
  store: StateStore;
  clock: Clock;
  windows: WindowTracker;
  /** How often a waiter looks again (other replicas' releases are seen this way). */
  pollMs?: number;
  /** The lock's lease, renewed every third of it while the holder's call runs. */
  leaseMs?: number;
  onError?: (err: unknown) => void;
}

const lockKey = (inn: string, kind: WindowKind) => `charge:${inn}:${kind}`;

export class ChargeGate {
  private readonly local = new Map<string, Set<() => void>>();
  private readonly pollMs: number;

  constructor(private readonly options: ChargeGateOptions) {
    this.pollMs = options.pollMs ?? 25;
  }

  /**
   * Resolves when the call may go: free (an open window covers it) or charged (this caller
   * now holds the company's lock and must call release() once the window is recorded).
   * `known`: the windows the caller has just read (the first look then costs no store read).
   * `attempt`: a caller that tries again after a store fault passes the same owner, with retry
   * set (a lock its earlier try took is then its own at once).
   */
  async enter(
    inn: string,
    need: WindowKind,
    deadline: number,
    signal?: WakeSignal,
    known?: CompanyWindows,
    attempt: GateAttempt = { owner: randomUUID(), retry: false },
  ): Promise<GateResult> {
    const { store, windows, clock } = this.options;
    const owner = attempt.owner;
    let fresh = known;
    // Only an earlier try can have left the lock this owner's: asked once, not on every poll.
    let mineAsked = !attempt.retry;
    // The caller's read stands for the look under the lock: first look, first try only.
    let trustKnown = known !== undefined && !attempt.retry;
    for (;;) {
      const current = fresh ?? (await windows.get(inn));
      fresh = undefined;
      const firstLook = trustKnown;
      trustKnown = false;
      if (windows.covers(current, need)) return { charged: false, windows: current };
      const blockedByDossier = need === 'requisites' && (await store.get(lockKey(inn, 'dossier'))) !== null;
      const leaseMs = this.options.leaseMs ?? 10_000;
      const key = lockKey(inn, need);
      let taken = !blockedByDossier && (await store.acquireLock(key, owner, leaseMs));
      if (!taken && !blockedByDossier && !mineAsked) {
        mineAsked = true;
        // Compare-and-extend: true only when the lock holds this owner (an earlier try's).
        taken = await store.renewLock(key, owner, leaseMs);
      }
      if (taken) {
        let again: CompanyWindows;
        try {
          // Read again unless the lock was free at the first look and nothing this replica has
          // learned since (a charge recorded here: WindowTracker.learn) shows a covering window.
          again = firstLook && windows.guess(inn, need) === undefined ? current : await windows.get(inn);
        } catch (err) {
          // Given back while the store still answers (else the retry finds it its own).
          await this.unlock(inn, need, owner).catch(() => {});
          throw err;
        }
        if (windows.covers(again, need)) {
          await this.unlock(inn, need, owner);
          return { charged: false, windows: again };
        }
        const lease = keepAlive(
          clock,
          Math.max(1, Math.floor(leaseMs / 3)),
          () => store.renewLock(key, owner, leaseMs),
          this.options.onError,
        );
        return {
          charged: true,
          windows: again,
          release: () => {
            lease.stop();
            return this.unlock(inn, need, owner);
          },
        };
      }
      if (clock.now() >= deadline) throw new ChargeWaitTimeout(inn);
      if (signal?.aborted) throw signal.reason ?? new Error('aborted');
      await this.wait(inn, Math.min(this.pollMs, Math.max(1, deadline - clock.now())), signal);
      if (signal?.aborted) throw signal.reason ?? new Error('aborted');
    }
  }

  private async unlock(inn: string, kind: WindowKind, owner: string): Promise<void> {
    await this.options.store.releaseLock(lockKey(inn, kind), owner);
    const waiters = this.local.get(inn);
    if (waiters) for (const wake of waiters) wake();
  }

  /**
   * Sleeps (on the injected clock) until a local release for this INN, `signal` aborting (the
   * client gone, the lead another replica's) or `ms`, whichever first.
   */
  private async wait(inn: string, ms: number, signal?: WakeSignal): Promise<void> {
    let waiters = this.local.get(inn);
    if (!waiters) {
      waiters = new Set();
      this.local.set(inn, waiters);
    }
    const set = waiters;
    const woken = new Waker();
    const wake = () => woken.wake();
    set.add(wake);
    signal?.addEventListener('abort', wake, { once: true });
    try {
      await this.options.clock.sleep(ms, woken);
    } finally {
      signal?.removeEventListener('abort', wake);
      set.delete(wake);
      if (set.size === 0) this.local.delete(inn);
    }
  }
}
