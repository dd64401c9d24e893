// Every upstream-interface call the emulator served (GET /_emulator/requests): route,
// status and the emulator-clock time, so tests can check rate limits over any interval.
// Control calls are not recorded. It never influences an answer.

export interface LoggedRequest {
  at_ms: number;
  at: string;
  route: string;
  method: string;
  path: string;
  status: number;
  request_id: string;
  key_name: string | null;
  /** The W3C traceparent the caller sent, when it sent one (the gateway's trace propagation). */
  traceparent?: string;
  /** The Idempotency-Key the caller sent, when it sent one (a replay carries its call's key). */
  idempotency_key?: string;
}

export class RequestLog {
  private entries: LoggedRequest[] = [];
  private counts = new Map<string, number>();

  record(entry: LoggedRequest): void {
    this.entries.push(entry);
    this.counts.set(entry.route, (this.counts.get(entry.route) ?? 0) + 1);
    if (this.entries.length > 100_000) this.entries.splice(0, 50_000);
  }

  snapshot(route?: string): { counts: Record<string, number>; total: number; requests: LoggedRequest[] } {
    let total = 0;
    for (const n of this.counts.values()) total += n;
    return {
      counts: Object.fromEntries(this.counts),
      total,
      requests: route ? this.entries.filter((e) => e.route === route) : [...this.entries],
    };
  }

  reset(): void {
    this.entries = [];
    this.counts.clear();
  }
}
