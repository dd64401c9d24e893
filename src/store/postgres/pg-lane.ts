// Sessions kept out of the pool between statements, so that a money statement goes out on the
// turn it is asked for (issue 33). pg-pool hands an idle session over on process.nextTick, and a
// tick queued from inside a chain of promise jobs runs only once that chain is done: the charge
// open asked for in the budget stage went out only after the stages below it and the rate take
// had run, ~0.2-0.3 ms later on a paid call (docs/performance.md, tenth pass). A held session is
// handed its statement at once; the pool still bounds the sessions (the lane holds at most its
// `max`, taken from it), owns the queue of callers waiting for one, and makes new ones (with the
// gateway's session settings: pg-link.ts).
//
// Must never: keep a session that failed (any error gives it back to the pool to be closed, as
// pool.query does), keep one the pool's waiters need (a session that finishes while a statement
// waits in the pool goes back to it), keep one unused past `idleMs`, or let a held session's
// error crash the process.
import type pg from 'pg';

interface Held {
  client: pg.PoolClient;
  /** performance.now() when it last finished a statement. */
  usedAt: number;
  /** Given back to the pool (it failed, was let go, or the lane closed). */
  gone: boolean;
  onError: (error: Error) => void;
}

export interface SessionLaneOptions {
  /** Most sessions held at once (the pool's own bound is what holds them). */
  max: number;
  /** A held session unused this long is given back (the pool then closes it after its own idle time). */
  idleMs: number;
  /** A held session lost its connection (idle, or under a statement, which fails too). */
  onError: (error: unknown) => void;
}

export class SessionLane {
  /** Held and idle, the most recently used last (taken first, so the others age out). */
  private readonly ready: Held[] = [];
  private held = 0;
  private closing = false;
  private readonly sweep: ReturnType<typeof setInterval>;

  constructor(
    private readonly pool: pg.Pool,
    private readonly options: SessionLaneOptions,
  ) {
    this.sweep = setInterval(() => this.letIdleGo(), Math.max(1_000, Math.floor(options.idleMs / 3)));
    this.sweep.unref();
  }

  /** Sessions the lane holds now (idle or running a statement). */
  get sessions(): number {
    return this.held;
  }

  /** One statement: on a held idle session at once, else on one taken from the pool. */
  async query<R extends pg.QueryResultRow>(statement: pg.QueryConfig): Promise<pg.QueryResult<R>> {
    const idle = this.ready.pop();
    if (idle) return this.run<R>(idle, statement);
    if (this.closing || this.held >= this.options.max) return this.pool.query<R>(statement);
    this.held++;
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      this.held--;
      throw error;
    }
    const held: Held = { client, usedAt: 0, gone: false, onError: (error) => this.lost(held, error) };
    client.on('error', held.onError);
    return this.run<R>(held, statement);
  }

  /** Gives every idle session back; one running a statement goes back when it finishes. */
  close(): void {
    this.closing = true;
    clearInterval(this.sweep);
    for (const held of this.ready.splice(0)) this.letGo(held);
  }

  private async run<R extends pg.QueryResultRow>(
    held: Held,
    statement: pg.QueryConfig,
  ): Promise<pg.QueryResult<R>> {
    let result: pg.QueryResult<R>;
    try {
      result = await held.client.query<R>(statement);
    } catch (error) {
      this.letGo(held, error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
    if (this.closing || this.pool.waitingCount > 0) this.letGo(held);
    else if (!held.gone) {
      held.usedAt = performance.now();
      this.ready.push(held);
    }
    return result;
  }

  /** The connection failed: pg errors the statement running on it (if any) and emits this too. */
  private lost(held: Held, error: Error): void {
    if (held.gone) return;
    const at = this.ready.indexOf(held);
    if (at >= 0) this.ready.splice(at, 1);
    this.letGo(held, error);
    this.options.onError(error);
  }

  /** Back to the pool: with an error, to be closed; without, to its idle list. */
  private letGo(held: Held, error?: Error): void {
    if (held.gone) return;
    held.gone = true;
    this.held--;
    held.client.removeListener('error', held.onError);
    // pg may emit again on a connection that already failed; the pool listens again from here on.
    if (error) held.client.on('error', () => {});
    held.client.release(error);
  }

  private letIdleGo(): void {
    const before = performance.now() - this.options.idleMs;
    for (let i = this.ready.length - 1; i >= 0; i--) {
      const held = this.ready[i]!;
      if (held.usedAt <= before) {
        this.ready.splice(i, 1);
        this.letGo(held);
      }
    }
  }
}
