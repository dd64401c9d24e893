// Simulated time for the limiter's tests: a Clock whose sleeps end only when the test moves a
// ManualClock past them, one sleeper's end at a time, with the event loop drained at each step
// (setImmediate turns) so the code under test acts at every instant it would act in real time.
// Minutes of governor traffic then run in milliseconds, the same way every time.
import type { Clock, ManualClock } from '../../src/clock.ts';

export interface SimulatedTime {
  /** The clock to hand to the code under test (now() and sleep()). */
  time: Clock;
  sleep: Clock['sleep'];
  /** Moves the clock to `target`, stopping at every sleeper's end on the way. */
  runUntil(target: number): Promise<void>;
  /** runUntil(now + ms). */
  advance(ms: number): Promise<void>;
}

/** `turns`: setImmediate turns drained at each step. */
export function simulatedTime(clock: ManualClock, turns = 5): SimulatedTime {
  const pending = new Set<{ until: number; resolve: () => void }>();
  const sleep = (ms: number, signal?: AbortSignal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const entry = { until: clock.now() + Math.max(0, ms), resolve };
      const onAbort = () => {
        pending.delete(entry);
        resolve();
      };
      entry.resolve = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      pending.add(entry);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  const flush = async () => {
    for (let i = 0; i < turns; i++) await new Promise((r) => setImmediate(r));
  };
  const runUntil = async (target: number) => {
    await flush();
    for (;;) {
      let next = target;
      for (const e of pending) if (e.until < next) next = e.until;
      if (next > clock.now()) clock.set(next);
      const due = [...pending].filter((e) => e.until <= clock.now());
      for (const e of due) {
        pending.delete(e);
        e.resolve();
      }
      await flush();
      if (clock.now() >= target && ![...pending].some((e) => e.until <= clock.now())) break;
    }
  };
  const time: Clock = { now: () => clock.now(), sleep };
  return { time, sleep, runUntil, advance: (ms) => runUntil(clock.now() + ms) };
}
