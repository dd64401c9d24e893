// The local outbox of money operations (DESIGN.md "State": nothing is lost). Recording a charge
// the upstream already made, or releasing one it proved it did not make, must reach the store
// even when the store is unreachable right after the answer: the answer still goes to the app
// (it was paid for) and the operation waits here, applied IN ORDER as soon as the store returns.
// A graceful shutdown flushes it, or writes what is left to a file in the state directory,
// which the next start replays. Every operation is idempotent in the store (a record is claimed
// by its idempotency key, a release of a gone entry is a no-op), so replaying one twice is safe.
//
// Must never: report an operation as applied before the store said so, reorder operations, or
// drop one (a failing operation stays at the head and is retried).
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock } from '../clock.ts';
import type { ChargeRecord, ChargeStore, RecordResult } from '../store/store.ts';

export type MoneyOp = { op: 'record'; record: ChargeRecord } | { op: 'release'; key: string };

export interface ChargeOutboxOptions {
  store: Pick<ChargeStore, 'recordCharge' | 'releaseCharge'>;
  clock: Clock;
  /** Where a shutdown leaves unapplied operations; null: nowhere (they are logged in full instead). */
  stateDir: string | null;
  /** How often a blocked head is tried again. */
  retryMs?: number;
  onError?: (err: unknown, what: string) => void;
  /** Operations that reached the store after waiting here (metrics, logs). */
  onApplied?: (op: MoneyOp) => void;
}

const FILE_PREFIX = 'outbox-';

export class ChargeOutbox {
  private readonly queue: MoneyOp[] = [];
  private flushing: Promise<void> | null = null;
  private readonly stop = new AbortController();
  private readonly loadedFiles: string[] = [];
  /** Operations being applied straight away (not queued): close() waits for them first. */
  private readonly applying = new Set<Promise<unknown>>();

  constructor(private readonly options: ChargeOutboxOptions) {}

  /** Operations waiting for the store. */
  get depth(): number {
    return this.queue.length;
  }

  /** A copy of what waits, oldest first (admin). */
  waiting(): readonly MoneyOp[] {
    return [...this.queue];
  }

  /**
   * Applies the operation now when nothing waits before it; otherwise (or when the store fails)
   * queues it behind the others. Returns the store's answer, or null when it was queued.
   */
  async submit(op: MoneyOp): Promise<RecordResult | null> {
    if (this.queue.length === 0) {
      const applying = this.apply(op);
      this.applying.add(applying);
      try {
        return await applying;
      } catch (err) {
        this.options.onError?.(err, 'store unreachable; money operation queued in the local outbox');
      } finally {
        this.applying.delete(applying);
      }
    }
    this.queue.push(op);
    this.kick();
    return null;
  }

  /**
   * submit() on the next turn of the event loop, for an operation nobody waits for (the release of
   * a call that cost nothing): what the caller answers is written before the store hears of it.
   * close() waits for it like for any other.
   */
  submitLater(op: MoneyOp): void {
    const later = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.submit(op));
    this.applying.add(later);
    void later.finally(() => this.applying.delete(later));
  }

  /**
   * Work that ends in money operations nobody awaits before an answer (a paid call's record made
   * after its answer was written, and the company's lock given back after it): close() waits for
   * it like for an operation being applied, so a graceful shutdown never cuts it off.
   */
  track(work: Promise<unknown>): void {
    const tracked = work.then(
      () => {},
      () => {},
    );
    this.applying.add(tracked);
    void tracked.finally(() => this.applying.delete(tracked));
  }

  /** Replays the operations a previous process left in the state directory. */
  async loadSaved(): Promise<number> {
    const dir = this.options.stateDir;
    if (!dir) return 0;
    let names: string[];
    try {
      names = (await readdir(dir)).filter((n) => n.startsWith(FILE_PREFIX) && n.endsWith('.jsonl')).sort();
    } catch {
      return 0; // no state directory yet: nothing was left
    }
    let count = 0;
    for (const name of names) {
      const path = join(dir, name);
      const text = await readFile(path, 'utf8');
      for (const line of text.split('\n')) {
        if (!line.trim()) continue;
        this.queue.push(JSON.parse(line) as MoneyOp);
        count++;
      }
      this.loadedFiles.push(path);
    }
    if (count > 0) this.kick();
    else await this.forgetLoadedFiles();
    return count;
  }

  /**
   * Flushes for at most `graceMs`; what is left goes to a file in the state directory (or, with
   * none configured, to the error callback in full, so an operator can replay it).
   */
  async close(graceMs: number): Promise<{ flushed: boolean; savedTo: string | null }> {
    // One flusher at a time: stop the background one first (it finishes its current step).
    this.stop.abort();
    // One not awaited by its caller (a free call's release, a paid call's record after its answer)
    // may still be on its way, or not yet started (submitLater); a failed one is queued by then.
    while (this.applying.size > 0) await Promise.allSettled([...this.applying]);
    await this.flushing;
    const deadline = this.options.clock.now() + graceMs;
    while (this.queue.length > 0 && this.options.clock.now() < deadline) {
      if (!(await this.applyHead())) await this.options.clock.sleep(Math.min(this.retryMs, 100));
    }
    if (this.queue.length === 0) {
      await this.forgetLoadedFiles();
      return { flushed: true, savedTo: null };
    }
    const dir = this.options.stateDir;
    if (!dir) {
      this.options.onError?.(
        new Error(JSON.stringify(this.queue)),
        `${this.queue.length} money operations could not reach the store and no state directory is set`,
      );
      return { flushed: false, savedTo: null };
    }
    await mkdir(dir, { recursive: true });
    const path = join(dir, `${FILE_PREFIX}${this.options.clock.now()}-${randomUUID().slice(0, 8)}.jsonl`);
    await writeFile(path, `${this.queue.map((op) => JSON.stringify(op)).join('\n')}\n`, { mode: 0o600 });
    await this.forgetLoadedFiles();
    return { flushed: false, savedTo: path };
  }

  private get retryMs(): number {
    return this.options.retryMs ?? 500;
  }

  private async apply(op: MoneyOp): Promise<RecordResult | null> {
    if (op.op === 'record') return this.options.store.recordCharge(op.record);
    await this.options.store.releaseCharge(op.key);
    return null;
  }

  /** Applies the head; true when it reached the store. */
  private async applyHead(): Promise<boolean> {
    const head = this.queue[0];
    if (!head) return true;
    try {
      await this.apply(head);
    } catch {
      return false;
    }
    this.queue.shift();
    this.options.onApplied?.(head);
    return true;
  }

  private kick(): void {
    if (this.flushing || this.stop.signal.aborted) return;
    this.flushing = (async () => {
      while (this.queue.length > 0 && !this.stop.signal.aborted) {
        if (!(await this.applyHead())) await this.options.clock.sleep(this.retryMs, this.stop.signal);
      }
      if (this.queue.length === 0) await this.forgetLoadedFiles();
    })().finally(() => {
      this.flushing = null;
    });
  }

  private async forgetLoadedFiles(): Promise<void> {
    for (const path of this.loadedFiles.splice(0)) await rm(path, { force: true });
  }
}
