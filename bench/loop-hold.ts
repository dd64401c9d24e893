// How long a piece of work held this process's event loop: perf_hooks monitorEventLoopDelay
// (1 ms resolution) while `work` runs, for the admin benches (ledger-export.ts,
// reconciliation.ts, statement.ts) whose gateway runs in this process. What any other request on
// that loop (a cache HIT) could have waited behind the work.
// Must never: report a delay it did not measure.
import { monitorEventLoopDelay } from 'node:perf_hooks';

export interface LoopHold<T> {
  value: T;
  /** The work's own time, ms. */
  ms: number;
  /** The loop's delays while it ran, ms. */
  p50: number;
  p99: number;
  max: number;
}

/** Runs `work`, recording the event loop's delay meanwhile (ms, to the hundredth). */
export async function loopHeldWhile<T>(work: () => Promise<T>): Promise<LoopHold<T>> {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  const started = performance.now();
  delay.enable();
  try {
    const value = await work();
    const ms = performance.now() - started;
    const round = (x: number) => Number(x.toFixed(2));
    return {
      value,
      ms: round(ms),
      p50: round(delay.percentile(50) / 1e6),
      p99: round(delay.percentile(99) / 1e6),
      max: round(delay.max / 1e6),
    };
  } finally {
    delay.disable();
  }
}
