// The Waker that ends lease sleeps (src/clock.ts): it must end a sleep on either clock at once,
// end a sleep begun after it was woken, and leave nothing behind when the sleep ends by time.
// The lease built on it (src/cost/lease.ts) renews on the clock and stops for good on stop().
import { describe, expect, it } from 'vitest';
import { ManualClock, timerSleep, Waker } from '../../src/clock.ts';
import { keepAlive } from '../../src/cost/lease.ts';

describe('Waker', () => {
  it('ends a real-timer sleep at once, long before its time', async () => {
    const waker = new Waker();
    const started = performance.now();
    const slept = timerSleep(60_000, waker);
    waker.wake();
    await slept;
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(waker.aborted).toBe(true);
  });

  it('ends a manual-clock sleep without the clock moving, and every later sleep at once', async () => {
    const clock = new ManualClock();
    const waker = new Waker();
    let done = false;
    const slept = clock.sleep(1_000, waker).then(() => {
      done = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(done).toBe(false);
    expect(clock.pendingSleeps).toBe(1);
    waker.wake();
    await slept;
    expect(clock.pendingSleeps).toBe(0);
    await clock.sleep(1_000, waker); // already woken: resolves without the clock moving
    expect(clock.pendingSleeps).toBe(0);
  });

  it('drops the listener of a sleep that ended by time; a later wake calls nothing twice', async () => {
    const clock = new ManualClock();
    const waker = new Waker();
    const calls: string[] = [];
    waker.addEventListener('abort', () => calls.push('kept'));
    const slept = clock.sleep(10, waker);
    clock.advance(10);
    await slept;
    const gone = () => calls.push('removed');
    waker.addEventListener('abort', gone);
    waker.removeEventListener('abort', gone);
    waker.wake();
    waker.wake();
    expect(calls).toEqual(['kept']);
  });
});

describe('keepAlive on a Waker', () => {
  it('renews every period on the injected clock and never again once stopped', async () => {
    const clock = new ManualClock();
    let renewals = 0;
    const lease = keepAlive(clock, 100, async () => {
      renewals++;
      return true;
    });
    const tick = async () => {
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    };
    await tick();
    clock.advance(100);
    await tick();
    clock.advance(100);
    await tick();
    expect(renewals).toBe(2);
    lease.stop();
    await tick();
    expect(clock.pendingSleeps).toBe(0);
    clock.advance(1_000);
    await tick();
    expect(renewals).toBe(2);
  });
});
