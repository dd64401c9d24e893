// Charge serialization per company (DESIGN.md "Cost rules"). While a charged call for an INN
// is in flight, calls for that INN that the window it opens will cover wait for it (bounded
// by their deadline) and then go free. The lock lives in the Store, so replicas serialize
// too. A dossier charge covers requisites; a requisites charge covers only requisites.
// Never lets a waiter make a second paid call for what an in-flight call will pay for.
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { StateStore } from '../store/store.ts';
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

export interface ChargeGateOptions {
  store: StateStore;
  clock: Clock;
  windows: WindowTracker;
  /** How often a waiter looks again (other replicas' releases are seen this way). */
  pollMs?: number;
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
   */
  async enter(inn: string, need: WindowKind, deadline: number, signal?: AbortSignal): Promise<GateResult> {
    const { store, windows, clock } = this.options;
    const owner = randomUUID();
    for (;;) {
      const current = await windows.get(inn);
      if (windows.covers(current, need)) return { charged: false, windows: current };
      const blockedByDossier = need === 'requisites' && (await store.get(lockKey(inn, 'dossier'))) !== null;
      const ttl = Math.max(1_000, deadline - clock.now() + 5_000);
      if (!blockedByDossier && (await store.acquireLock(lockKey(inn, need), owner, ttl))) {
        const again = await windows.get(inn);
        if (windows.covers(again, need)) {
          await this.unlock(inn, need, owner);
          return { charged: false, windows: again };
        }
        return { charged: true, windows: again, release: () => this.unlock(inn, need, owner) };
      }
      if (clock.now() >= deadline) throw new ChargeWaitTimeout(inn);
      if (signal?.aborted) throw signal.reason ?? new Error('aborted');
      await this.wait(inn, Math.min(this.pollMs, Math.max(1, deadline - clock.now())));
    }
  }

  private async unlock(inn: string, kind: WindowKind, owner: string): Promise<void> {
    await this.options.store.releaseLock(lockKey(inn, kind), owner);
    const waiters = this.local.get(inn);
    if (waiters) for (const wake of waiters) wake();
  }

  /** Sleeps until a local release for this INN or `ms`, whichever comes first. */
  private wait(inn: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      let waiters = this.local.get(inn);
      if (!waiters) {
        waiters = new Set();
        this.local.set(inn, waiters);
      }
      const set = waiters;
      const wake = () => {
        clearTimeout(timer);
        set.delete(wake);
        if (set.size === 0) this.local.delete(inn);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      set.add(wake);
    });
  }
}
