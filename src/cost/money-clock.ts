// One clock for money (issue 28 item 6): budget days and months, pending-entry leases and the
// reconciler's "lease lapsed" decisions follow the money store's clock (Redis TIME, PostgreSQL
// now()), not each replica's. Replicas whose own clocks disagree by 45 s used to disagree about
// when a budget day ends (a day cap of 3 let 6 charges through in one true day) and the fast one
// replayed the others' live calls as if their leases had lapsed.
//
// The clock measures the store's time every `intervalMs` (the sample with the shortest round
// trip of three; error at most half that round trip, a few ms) and answers the local clock plus
// that offset. The skew (this replica minus the store) is reported so it can be exported and
// alerted on. A store without a clock of its own (the in-process memory store) is the local
// clock; so is a failed measurement (the last offset is kept).
//
// Must never: jump backwards by more than a measurement's error because of a slow sample (the
// shortest round trip wins), or block a caller on a measurement.
import type { Clock, WakeSignal } from '../clock.ts';

export interface MoneyClockOptions {
  /** The store's time in ms (null: the store has no clock of its own). */
  serverTimeMs: (() => Promise<number>) | null;
  intervalMs?: number;
  /** Called after each measurement with this replica's skew (local minus store), ms. */
  onSkew?: (skewMs: number) => void;
  onError?: (err: unknown) => void;
}

export class MoneyClock implements Clock {
  private offsetMs = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly base: Clock,
    private readonly options: MoneyClockOptions,
  ) {}

  now(): number {
    return this.base.now() + this.offsetMs;
  }

  sleep(ms: number, signal?: WakeSignal): Promise<void> {
    return this.base.sleep(ms, signal);
  }

  /** This replica's clock minus the store's, ms (0 until measured, or with no store clock). */
  skewMs(): number {
    return -this.offsetMs;
  }

  /** Measures the offset now (three samples; the one with the shortest round trip wins). */
  async sync(): Promise<void> {
    const read = this.options.serverTimeMs;
    if (!read) return;
    try {
      let best: { rtt: number; offset: number } | null = null;
      for (let i = 0; i < 3; i++) {
        const t0 = this.base.now();
        const server = await read();
        const t1 = this.base.now();
        const sample = { rtt: t1 - t0, offset: server - (t0 + t1) / 2 };
        if (!best || sample.rtt < best.rtt) best = sample;
      }
      this.offsetMs = Math.round(best!.offset);
      this.options.onSkew?.(this.skewMs());
    } catch (err) {
      this.options.onError?.(err);
    }
  }

  /** Measures now, then every intervalMs (default 10 s) in the background. */
  async start(): Promise<void> {
    if (!this.options.serverTimeMs) return;
    await this.sync();
    this.timer = setInterval(() => void this.sync(), this.options.intervalMs ?? 10_000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
