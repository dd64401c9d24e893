// retryStoreFaults (cost/store-retry.ts): store faults are retried with growing, jittered waits
// until the deadline or the configured wait; other errors and an aborted request are not retried.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { retryStoreFaults } from '../../src/cost/store-retry.ts';
import { StoreUnavailableError } from '../../src/store/store.ts';

/** A clock whose sleep advances it at once (no real time passes). */
function jumpingClock() {
  const clock = new ManualClock(1_000_000);
  const slept: number[] = [];
  clock.sleep = async (ms: number) => {
    slept.push(ms);
    clock.advance(ms);
  };
  return { clock, slept };
}

describe('retryStoreFaults', () => {
  it('waits a fault out with growing waits (full jitter) and returns the result', async () => {
    const { clock, slept } = jumpingClock();
    let calls = 0;
    const value = await retryStoreFaults(
      async () => {
        calls += 1;
        if (calls < 6) throw new StoreUnavailableError('down');
        return 'ok';
      },
      { clock, random: () => 1, deadline: clock.now() + 30_000, maxWaitMs: 10_000 },
    );
    expect(value).toBe('ok');
    expect(slept).toEqual([50, 100, 200, 400, 800]);
  });

  it('gives up at the deadline or maxWaitMs, whichever is first, with the fault itself', async () => {
    const { clock, slept } = jumpingClock();
    const start = clock.now();
    const fault = new StoreUnavailableError('still down');
    await expect(
      retryStoreFaults(
        async () => {
          throw fault;
        },
        { clock, random: () => 1, deadline: start + 2_000, maxWaitMs: 10_000 },
      ),
    ).rejects.toBe(fault);
    expect(clock.now() - start).toBe(2_000);
    expect(slept.reduce((a, b) => a + b, 0)).toBe(2_000);
    const second = jumpingClock();
    await expect(
      retryStoreFaults(
        async () => {
          throw fault;
        },
        { clock: second.clock, random: () => 0.5, deadline: second.clock.now() + 60_000, maxWaitMs: 3_000 },
      ),
    ).rejects.toBe(fault);
    expect(second.slept.reduce((a, b) => a + b, 0)).toBe(3_000);
  });

  it('never retries other errors, a zero wait, or an aborted request', async () => {
    const { clock } = jumpingClock();
    let calls = 0;
    const boom = new Error('bug');
    await expect(
      retryStoreFaults(
        async () => {
          calls += 1;
          throw boom;
        },
        { clock, random: () => 1, deadline: clock.now() + 30_000, maxWaitMs: 10_000 },
      ),
    ).rejects.toBe(boom);
    expect(calls).toBe(1);
    const fault = new StoreUnavailableError('down');
    calls = 0;
    const fail = async () => {
      calls += 1;
      throw fault;
    };
    await expect(
      retryStoreFaults(fail, { clock, random: () => 1, deadline: clock.now() + 30_000, maxWaitMs: 0 }),
    ).rejects.toBe(fault);
    const aborted = new AbortController();
    aborted.abort();
    await expect(
      retryStoreFaults(fail, {
        clock,
        random: () => 1,
        deadline: clock.now() + 30_000,
        maxWaitMs: 10_000,
        signal: aborted.signal,
      }),
    ).rejects.toBe(fault);
    expect(calls).toBe(2);
  });
});
