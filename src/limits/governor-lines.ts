// The governor's local waiting lines, one per set of classes (key, search+key, check+key,
// suggest), and each line's loop: it refuses the waiters past their deadline, tries the next
// waiter's take (skipping apps blocked by their own cap or share), grants it or notes the refusal,
// refuses at once those who now cannot start before their deadline, and sleeps until the refusing
// class frees (its retryAfterMs plus up to jitterMs, at most pollMs). Also the waiters' promises
// (finish, fail) and the waiting marks of the lines' apps (waiting-marks.ts decides them,
// fair-share.ts writes them).
//
// Time and chance from the injected Clock and Random only. Must never: grant a waiter without its
// take (admission.ts), resolve a waiter twice or leave one unresolved, or sleep past a deadline.
import type { Clock, Random } from '../clock.ts';
import { wakeSleepers } from '../clock.ts';
import type { Admission, Candidate } from './admission.ts';
import type { ClassBook } from './class-book.ts';
import type { FairShare } from './fair-share.ts';
import type { HeadroomMemo } from './headroom-memo.ts';
import type { LimitClassName } from './limit-classes.ts';
import { type Denial, denial, type Permit } from './permit.ts';
import type { Verdict } from './start-verdict.ts';
import { isAppClass, type StoreClass } from './store-class.ts';
import type { DenialReason, WaitStats } from './wait-stats.ts';
import { type Refusal, WaitingLine } from './waiting-line.ts';
import { marksAfterLeave, marksAfterRefusal, marksOnJoin, type WaitingStep } from './waiting-marks.ts';

export interface Waiter extends Candidate {
  readonly line: Line;
  readonly resolve: (result: Permit | Denial) => void;
  readonly reject: (error: unknown) => void;
  detach?: () => void;
  done: boolean;
}

/** A waiting line and its loop's state. */
export interface Line {
  readonly queue: WaitingLine<Waiter>;
  running: boolean;
  napping: 'class' | 'caps' | null;
  wake: AbortController;
}

export interface GovernorLinesOptions {
  clock: Clock;
  random: Random;
  /** Up to this much is added to each retry so replicas do not retry in lockstep. */
  jitterMs: number;
  /** Longest sleep between tries while waiting. */
  pollMs: number;
  book: Pick<ClassBook, 'weightOf' | 'priorityOf'>;
  admission: Admission;
  fair: Pick<FairShare, 'markWaiting' | 'clearWaiting'>;
  /** Told of every change of a queue (who competes, and so X-RateLimit-*, may change). */
  memo: HeadroomMemo;
  stats: WaitStats;
  onError(error: unknown): void;
}

export class GovernorLines {
  /** Set by close(): every waiter is refused (`shutdown`) and no loop runs again. */
  closed = false;
  private readonly lines = new Map<string, Line>();

  constructor(private readonly o: GovernorLinesOptions) {}

  /** The line of this set of classes, made on first use. */
  lineFor(classes: LimitClassName[]): Line {
    const key = classes.join('+');
    let line = this.lines.get(key);
    if (!line) {
      const queue = new WaitingLine<Waiter>(classes, {
        weightOf: (a) => this.o.book.weightOf(a),
        priorityOf: (a) => this.o.book.priorityOf(a),
      });
      line = { queue, running: false, napping: null, wake: new AbortController() };
      this.lines.set(key, line);
    }
    return line;
  }

  /** Every line's queue (the admin snapshot). */
  queues(): WaitingLine<Waiter>[] {
    return [...this.lines.values()].map((l) => l.queue);
  }

  wakeAll(): void {
    for (const line of this.lines.values()) wake(line);
  }

  /** Wakes the lines that wait for any of these classes (their slots were given back). */
  wakeFor(classes: LimitClassName[]): void {
    for (const line of this.lines.values())
      if (line.queue.classes.some((c) => classes.includes(c))) wake(line);
  }

  /** The line's loop; returns at once when it already runs. */
  async pump(line: Line): Promise<void> {
    if (line.running || this.closed) return;
    line.running = true;
    const q = line.queue;
    const { admission } = this.o;
    try {
      while (!this.closed && q.size > 0) {
        let now = this.o.clock.now();
        for (const w of q.overdue(now))
          this.finish(
            w,
            this.deny(
              w.app,
              w.classes[0] ?? 'key',
              q.lateRetryAfterMs(admission.namesOf(w), now),
              'deadline',
            ),
          );
        const w = q.next(now);
        if (!w) {
          await this.nap(line, 'caps', q.blockedNapMs(now));
          continue;
        }
        let refusal: Refusal | null;
        try {
          refusal = await admission.take(w);
        } catch (error) {
          q.remove(w);
          this.fail(w, error);
          continue;
        }
        if (w.done) {
          if (!refusal) await admission.giveBack(w).catch((error: unknown) => this.o.onError(error));
          continue;
        }
        if (!refusal) {
          q.served(w, now);
          this.finish(w, admission.grant(w));
          continue;
        }
        now = this.o.clock.now();
        q.refused(w.app, refusal, now);
        this.markWaiting(line, refusal.cls, w.app);
        const hopeless = await admission.estimate(q, q.ordered()).catch((error: unknown) => {
          this.o.onError(error);
          return new Map<Waiter, Verdict>();
        });
        for (const [h, v] of hopeless) this.finish(h, this.deny(h.app, v.limit, v.retryAfterMs, v.reason));
        if (!isAppClass(refusal.cls)) {
          const jitter = this.o.random() * this.o.jitterMs;
          await this.nap(line, 'class', q.retryNapMs(refusal.retryAfterMs, jitter, this.o.pollMs, now));
        }
      }
    } finally {
      line.running = false;
    }
  }

  /** Resolves a waiter (once) and takes it out of its line. */
  finish(w: Waiter, result: Permit | Denial): void {
    if (w.done) return;
    this.o.memo.changed();
    w.done = true;
    w.line.queue.remove(w);
    w.detach?.();
    this.afterLeave(w);
    w.resolve(result);
  }

  /** Rejects a waiter (once) with a fault; the caller has taken it out of its line. */
  fail(w: Waiter, error: unknown): void {
    if (w.done) return;
    w.done = true;
    w.detach?.();
    this.afterLeave(w);
    w.reject(error);
  }

  /** A refusal, counted for the app. */
  deny(app: string, limit: LimitClassName, retryAfterMs: number, reason: DenialReason): Denial {
    this.o.stats.denied(app, reason);
    return denial(limit, retryAfterMs, reason);
  }

  /** After a refusal of `app`'s take in this line: the waiting marks it calls for (waiting-marks.ts). */
  markWaiting(line: Line, refusedBy: StoreClass, app: string): void {
    if (!isAppClass(refusedBy)) {
      line.queue.lastRefusedBy = refusedBy;
      this.o.memo.changed(); // who competes may change: pacing, and so X-RateLimit-Remaining
    }
    this.mark(marksAfterRefusal(this.queues(), line.queue, refusedBy, app, this.o.clock.now()));
  }

  /** Joining a line others already wait in: this app says it waits for what holds the line back. */
  joinWaiting(line: Line, app: string): void {
    this.mark(marksOnJoin(line.queue, app));
  }

  /** A waiter left: when its app waits for nothing more here, it leaves the waiting logs. */
  afterLeave(w: Waiter): void {
    this.mark(marksAfterLeave(this.queues(), w.classes, w.app));
  }

  /** Refuses everyone still waiting (`shutdown`) and wakes every loop to end. */
  close(): void {
    this.closed = true;
    for (const line of this.lines.values()) {
      for (const w of line.queue.ordered())
        this.finish(w, this.deny(w.app, w.classes[0] ?? 'key', 0, 'shutdown'));
      wake(line);
    }
  }

  private mark(steps: WaitingStep[]): void {
    const { fair, onError } = this.o;
    for (const step of steps)
      ('mark' in step
        ? fair.markWaiting(step.mark, step.app, step.competes)
        : fair.clearWaiting(step.clear, step.app)
      ).catch((error: unknown) => onError(error));
  }

  private async nap(line: Line, why: 'class' | 'caps', ms: number): Promise<void> {
    line.napping = why;
    await this.o.clock.sleep(Math.max(0, ms), line.wake.signal);
    line.napping = null;
    if (line.wake.signal.aborted) line.wake = new AbortController();
  }
}

/** Wakes a line's nap (every answer wakes every line). */
export function wake(line: { wake: AbortController }): void {
  wakeSleepers(line.wake);
}
