// Per-app counters and recent waits for the admin snapshot: how many requests each app got
// started, how many were refused and why, and the median / p95 / max of its recent waits.
//
// In-process and bounded (a ring of recent samples). Must never feed back into decisions.

export type DenialReason = 'deadline' | 'app_cap' | 'paused' | 'aborted' | 'shutdown';

export interface AppWaitStats {
  granted: number;
  denied: Record<DenialReason, number>;
  waitMs: { samples: number; median: number; p95: number; max: number };
}

export class WaitStats {
  private readonly apps = new Map<
    string,
    { granted: number; denied: Record<DenialReason, number>; ring: number[]; next: number }
  >();

  constructor(private readonly ringSize = 256) {}

  granted(app: string, waitedMs: number): void {
    const a = this.app(app);
    a.granted++;
    if (a.ring.length < this.ringSize) a.ring.push(waitedMs);
    else a.ring[a.next] = waitedMs;
    a.next = (a.next + 1) % this.ringSize;
  }

  denied(app: string, reason: DenialReason): void {
    this.app(app).denied[reason]++;
  }

  snapshot(app: string): AppWaitStats {
    const a = this.app(app);
    const sorted = [...a.ring].sort((x, y) => x - y);
    const pick = (q: number) =>
      sorted.length ? (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0) : 0;
    return {
      granted: a.granted,
      denied: { ...a.denied },
      waitMs: {
        samples: sorted.length,
        median: pick(0.5),
        p95: pick(0.95),
        max: sorted[sorted.length - 1] ?? 0,
      },
    };
  }

  names(): string[] {
    return [...this.apps.keys()];
  }

  private app(app: string) {
    let a = this.apps.get(app);
    if (!a) {
      a = {
        granted: 0,
        denied: { deadline: 0, app_cap: 0, paused: 0, aborted: 0, shutdown: 0 },
        ring: [],
        next: 0,
      };
      this.apps.set(app, a);
    }
    return a;
  }
}
