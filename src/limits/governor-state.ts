// The limiter's snapshot for GET /admin/limits: every class's limit, use, pause, local queue and
// the apps waiting for it (or competing for it) on any replica; the upstream-minute cap; every app's weight, priority,
// caps, waiters and wait statistics.
//
// Read-only: one limiterState round trip and a refresh of who waits. Must never decide, take or
// give back a slot, nor change a limit.
import type { SlotStore } from '../store/slot-store.ts';
import type { ClassBook } from './class-book.ts';
import type { FairShare } from './fair-share.ts';
import { LIMIT_CLASS_NAMES, type LimitClassName } from './limit-classes.ts';
import type { AppWaitStats, WaitStats } from './wait-stats.ts';

export interface GovernorState {
  at: number;
  classes: {
    name: LimitClassName;
    limit: number;
    configuredLimit: number;
    windowMs: number;
    used: number;
    pausedForMs: number;
    queued: Record<string, number>;
    /** Apps waiting for this class on any replica (as last read). */
    waitingApps: string[];
    /**
     * Apps competing for it: waiting, or waited or refused within the window (as last read).
     * While an app other than the caller is listed, the caller's starts are paced.
     */
    competingApps: string[];
  }[];
  upstreamMinuteCap: { resetAtMs: number; limit: number; used: number } | null;
  apps: (AppWaitStats & {
    name: string;
    weight: number;
    priority: number;
    caps: Partial<Record<LimitClassName, number>>;
    waiting: number;
  })[];
}

/** One local waiting line, as far as the snapshot needs it. */
export interface QueuedLine {
  readonly classes: LimitClassName[];
  depthByApp(): Record<string, number>;
}

export async function readGovernorState(a: {
  now: number;
  store: SlotStore;
  book: ClassBook;
  fair: FairShare;
  stats: WaitStats;
  /** Read after the Store answers, so the queues are as of the answer. */
  lines: Iterable<QueuedLine>;
}): Promise<GovernorState> {
  const { now, book, fair, stats } = a;
  const specs = LIMIT_CLASS_NAMES.map((name) => book.spec(name));
  const cap = book.activeMinuteCap(now);
  if (cap) specs.push(book.minuteCapSpec(cap));
  const states = await a.store.limiterState(specs);
  await fair.refresh([...LIMIT_CLASS_NAMES]);
  const queued = new Map<LimitClassName, Record<string, number>>();
  const waiting = new Map<string, number>();
  for (const line of a.lines) {
    for (const [app, n] of Object.entries(line.depthByApp())) {
      waiting.set(app, (waiting.get(app) ?? 0) + n);
      for (const c of line.classes) {
        const q = queued.get(c) ?? {};
        q[app] = (q[app] ?? 0) + n;
        queued.set(c, q);
      }
    }
  }
  const names = new Set([...book.appNames(), ...stats.names(), ...waiting.keys()]);
  return {
    at: now,
    classes: LIMIT_CLASS_NAMES.map((name, i) => ({
      name,
      limit: specs[i]?.limit ?? 0,
      configuredLimit: book.classes[name].limit,
      windowMs: book.classes[name].windowMs,
      used: states[i]?.used ?? 0,
      pausedForMs: states[i]?.pausedForMs ?? 0,
      queued: queued.get(name) ?? {},
      waitingApps: fair.waitingApps(name),
      competingApps: fair.competingApps(name),
    })),
    upstreamMinuteCap: cap ? { ...cap, used: states[LIMIT_CLASS_NAMES.length]?.used ?? 0 } : null,
    apps: [...names].sort().map((name) => ({
      name,
      weight: book.weightOf(name),
      priority: book.priorityOf(name),
      caps: book.caps(name),
      waiting: waiting.get(name) ?? 0,
      ...stats.snapshot(name),
    })),
  };
}
