// One contract per Store role, every backend's test file calls runStoreContract with a factory and
// each role's suite (cache-contract.ts, state-contract.ts, bus-contract.ts, budget-contract.ts,
// slot-contract.ts, ledger-contract.ts, charge-contract.ts) runs over it. Durations are small so
// they also run in real time (Redis uses server time); with a manual clock `pass` just advances
// it and timing assertions become exact.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.ts';
import type { Store } from '../../src/store/index.ts';
import { describeBudgetContract } from './budget-contract.ts';
import { describeBusContract } from './bus-contract.ts';
import { describeCacheContract } from './cache-contract.ts';
import { describeChargeContract } from './charge-contract.ts';
import { describeLedgerContract } from './ledger-contract.ts';
import { describeSlotContract } from './slot-contract.ts';
import { describeStateContract } from './state-contract.ts';

/** Real-time backends get this slack in timing assertions (room for a busy CI machine). */
export const SLACK_MS = 120;
/** A short TTL that real-time backends can still tell apart from "expired". */
export const TTL = 300;

export interface StoreHarness {
  store: Store;
  /** Lets `ms` pass for the store: advances a manual clock, or sleeps for real. */
  pass(ms: number): Promise<void>;
  /** True when pass() is exact, so retry-after values can be compared exactly. */
  exactTime: boolean;
  /** The gateway clock callers pass times from (leases, windows); a ManualClock in every harness. */
  clock: Clock & { advance(ms: number): void };
  /** A second store on the same backing storage (another replica), when the backend has one. */
  replica?: () => Promise<Store>;
  close(): Promise<void>;
}

export type StoreFactory = () => Promise<StoreHarness>;

/** What each role's part of the contract sees of the current test. */
export interface ContractContext {
  readonly store: Store;
  readonly h: StoreHarness;
  /** `actual` is `expected`: exactly with a manual clock, within slack (never above) in real time. */
  expectAbout(actual: number, expected: number): void;
}

/** Role suites a backend runs; a money-only backend (PostgreSQL) runs the money ones. */
export type ContractPart = 'cache' | 'state' | 'bus' | 'budgets' | 'slots' | 'ledger' | 'charges';
export const MONEY_PARTS: readonly ContractPart[] = ['budgets', 'ledger', 'charges'];

export function runStoreContract(
  name: string,
  factory: StoreFactory,
  parts: readonly ContractPart[] = ['cache', 'state', 'bus', 'budgets', 'slots', 'ledger', 'charges'],
): void {
  describe(`Store contract: ${name}`, () => {
    let h: StoreHarness;
    beforeEach(async () => {
      h = await factory();
    });
    afterEach(async () => {
      await h.close();
    });

    it('pings and names its kind', async () => {
      await h.store.ping();
      expect(['memory', 'redis']).toContain(h.store.kind);
    });

    const t: ContractContext = {
      get store() {
        return h.store;
      },
      get h() {
        return h;
      },
      expectAbout(actual: number, expected: number): void {
        if (h.exactTime) expect(actual).toBe(expected);
        else {
          expect(actual).toBeLessThanOrEqual(expected);
          expect(actual).toBeGreaterThan(expected - SLACK_MS);
        }
      },
    };
    if (parts.includes('cache')) describeCacheContract(t);
    if (parts.includes('state')) describeStateContract(t);
    if (parts.includes('bus')) describeBusContract(t);
    if (parts.includes('budgets')) describeBudgetContract(t);
    if (parts.includes('slots')) describeSlotContract(t);
    if (parts.includes('ledger')) describeLedgerContract(t);
    if (parts.includes('charges')) describeChargeContract(t);
  });
}

export async function settle(ms: number): Promise<void> {
  await new Promise((r) => setTimeout(r, ms));
}

/** Waits (real time) until `check` holds, failing after 2 s. */
export async function until(check: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await settle(5);
  }
}
