// Runs callbacks at instants of the EMULATOR clock: check completions, the check wait and
// webhook retries. It fires on real timers and again whenever the clock is advanced, so
// tests can skip a 15-minute retry in one control call. It never reads Date.now().
import type { Clock } from '../clock.ts';

interface Task {
  id: number;
  dueAt: number;
  run: () => void;
}

export class ClockScheduler {
  private tasks: Task[] = [];
  private nextId = 1;
  private timer: NodeJS.Timeout | null = null;
  private timerDueAt = Number.POSITIVE_INFINITY;
  private closed = false;

  constructor(private readonly clock: Clock) {}

  /** Schedules `run` at emulator time `dueAt`; returns a cancel function. */
  at(dueAt: number, run: () => void): () => void {
    const task = { id: this.nextId++, dueAt, run };
    this.tasks.push(task);
    this.tasks.sort((a, b) => a.dueAt - b.dueAt || a.id - b.id);
    this.arm();
    return () => {
      this.tasks = this.tasks.filter((t) => t !== task);
    };
  }

  /** Schedules `run` after `ms` of emulator time. */
  after(ms: number, run: () => void): () => void {
    return this.at(this.clock.now() + ms, run);
  }

  /** Runs every task that is due now; call after the clock moves. */
  poke(): void {
    if (this.closed) return;
    const now = this.clock.now();
    while (this.tasks.length > 0 && this.tasks[0]!.dueAt <= now) {
      const task = this.tasks.shift()!;
      try {
        task.run();
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
    this.arm();
  }

  /** Drops every pending task (emulator reset). */
  clear(): void {
    this.tasks = [];
    this.arm();
  }

  close(): void {
    this.closed = true;
    this.tasks = [];
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  get pending(): number {
    return this.tasks.length;
  }

  private arm(): void {
    if (this.closed) return;
    const first = this.tasks[0];
    if (!first) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = null;
      this.timerDueAt = Number.POSITIVE_INFINITY;
      return;
    }
    if (this.timer && this.timerDueAt <= first.dueAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerDueAt = first.dueAt;
    const delay = Math.max(0, Math.min(first.dueAt - this.clock.now(), 2_147_000_000));
    this.timer = setTimeout(() => {
      this.timer = null;
      this.timerDueAt = Number.POSITIVE_INFINITY;
      this.poke();
    }, delay);
    this.timer.unref();
  }
}
