// Every wait in the request path runs on the injected clock (issue #15): retries and their
// backoff, charge-gate waits and lock leases, and cross-replica coalescing polls are driven here
// by a ManualClock, in no real time, the same way every run.
import { describe, expect, it } from 'vitest';
import { ManualClock, seededRandom } from '../../src/clock.ts';
import { ChargeGate, ChargeWaitTimeout } from '../../src/cost/charge-gate.ts';
import { Coalescer, type SharedAnswer } from '../../src/cost/coalescer.ts';
import { WindowTracker } from '../../src/cost/window-tracker.ts';
import type { RequestContext } from '../../src/pipeline/context.ts';
import type { PipelineDeps } from '../../src/pipeline/deps.ts';
import { SEND_CONDITIONS } from '../../src/pipeline/index.ts';
import { type Answer, isRefusal, type Outcome } from '../../src/pipeline/outcome.ts';
import { SendConditions } from '../../src/pipeline/send-conditions.ts';
import { compose } from '../../src/pipeline/stage.ts';
import { retry } from '../../src/pipeline/stages/retry.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';

const INN = '7707083893';

/** Moves the clock whenever something sleeps on it, until `done` settles. */
async function drive<T>(clock: ManualClock, done: Promise<T>, stepMs: number): Promise<T> {
  let settled = false;
  const mark = () => {
    settled = true;
  };
  done.then(mark, mark);
  for (let i = 0; i < 10_000 && !settled; i++) {
    await new Promise((r) => setImmediate(r));
    if (clock.pendingSleeps > 0) clock.advance(stepMs);
  }
  return done;
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}): Answer => ({
  status,
  headers: { 'content-type': 'application/json', ...headers },
  body: Buffer.from(JSON.stringify(body)),
});

describe('the retry stage on a manual clock', () => {
  function ctxFor(clock: ManualClock): RequestContext {
    return {
      requestId: 'r1',
      route: { name: 'bank' } as RequestContext['route'],
      headers: {},
      call: { params: {}, query: {}, body: undefined, idempotencyKey: undefined },
      rawBody: undefined,
      pathAndQuery: '/v1/banks/044525225',
      signal: new AbortController().signal,
      sendWhen: new SendConditions(SEND_CONDITIONS),
      app: null,
      shape: null,
      directives: {} as RequestContext['directives'],
      policy: null,
      deadline: clock.now() + 15_000,
      timeoutMs: 15_000,
    };
  }

  it('waits out two 503 billing_unavailable answers with jittered backoff, then answers 200', async () => {
    const clock = new ManualClock();
    const deps = { clock, random: seededRandom(1) } as unknown as PipelineDeps;
    const answers = [
      json(503, { error: { code: 'billing_unavailable' } }),
      json(503, { error: { code: 'billing_unavailable' } }),
      json(200, { ok: true }),
    ];
    const sentAt: number[] = [];
    const run = compose([
      retry(deps),
      async () => {
        sentAt.push(clock.now());
        return answers.shift()!;
      },
    ]);
    const started = performance.now();
    const out = await drive(clock, run(ctxFor(clock)), 10);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(isRefusal(out)).toBe(false);
    expect((out as Answer).status).toBe(200);
    expect(sentAt).toHaveLength(3);
    // Backoff grows: [50, 100] ms before the second attempt, [100, 200] ms before the third.
    expect(sentAt[1]! - sentAt[0]!).toBeGreaterThanOrEqual(50);
    expect(sentAt[2]! - sentAt[1]!).toBeGreaterThanOrEqual(100);
  });

  it('a 409 idempotency_in_progress is waited out until the deadline, then the last answer stands', async () => {
    const clock = new ManualClock();
    const deps = { clock, random: seededRandom(2) } as unknown as PipelineDeps;
    let sent = 0;
    const run = compose([
      retry(deps),
      async (): Promise<Outcome> => {
        sent++;
        return json(409, { error: { code: 'idempotency_in_progress' } });
      },
    ]);
    const ctx = ctxFor(clock);
    const out = await drive(clock, run(ctx), 50);
    expect((out as Answer).status).toBe(409);
    // Far more than the 6 attempts a failure gets: bounded by the 15 s deadline alone.
    expect(sent).toBeGreaterThan(6);
    expect(clock.now()).toBeLessThanOrEqual(ctx.deadline + 2_000);
  });
});

describe('the charge gate on a manual clock', () => {
  function gateOn(clock: ManualClock, store: MemoryStore) {
    const windows = new WindowTracker({ store, clock, windowMs: 900_000, safetyMarginMs: 30_000 });
    return { gate: new ChargeGate({ store, clock, windows, pollMs: 25, leaseMs: 10_000 }), windows };
  }

  it('a waiter goes free once the paying call records its window and releases', async () => {
    const clock = new ManualClock();
    const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
    const { gate, windows } = gateOn(clock, store);
    const first = await gate.enter(INN, 'dossier', clock.now() + 30_000);
    expect(first.charged).toBe(true);
    const waiting = gate.enter(INN, 'dossier', clock.now() + 30_000);
    // A few polls of the waiter on the clock (bounded: its 30 s deadline must not pass).
    for (let i = 0; i < 10; i++) {
      await new Promise((r) => setImmediate(r));
      if (clock.pendingSleeps > 0) clock.advance(25);
    }
    await windows.open(INN, 'dossier', clock.now());
    if (first.charged) await first.release();
    const second = await drive(clock, waiting, 25);
    expect(second.charged).toBe(false);
  });

  it('a waiter whose deadline passes gets ChargeWaitTimeout, after exactly its wait on the clock', async () => {
    const clock = new ManualClock();
    const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
    const { gate } = gateOn(clock, store);
    const first = await gate.enter(INN, 'dossier', clock.now() + 60_000);
    expect(first.charged).toBe(true);
    const start = clock.now();
    await expect(drive(clock, gate.enter(INN, 'dossier', start + 2_000), 25)).rejects.toBeInstanceOf(
      ChargeWaitTimeout,
    );
    expect(clock.now() - start).toBeGreaterThanOrEqual(2_000);
    expect(clock.now() - start).toBeLessThan(2_100);
  });

  it("a holder's lease is renewed while its call runs; a dead holder's lock frees after one lease", async () => {
    const clock = new ManualClock();
    const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
    const { gate } = gateOn(clock, store);
    const held = await gate.enter(INN, 'dossier', clock.now() + 600_000);
    expect(held.charged).toBe(true);
    // 60 s of a live call: renewals every ~3.3 s keep the 10 s lease.
    for (let t = 0; t < 60_000; t += 1_000) {
      clock.advance(1_000);
      await new Promise((r) => setImmediate(r));
    }
    expect(await store.acquireLock(`charge:${INN}:dossier`, 'other', 10_000)).toBe(false);
    if (held.charged) await held.release();

    // A replica that died holding another company's lock renews nothing: whatever wait the
    // next caller allows itself (10 minutes here), it gets the lock within one lease.
    const other = '7736050003';
    expect(await store.acquireLock(`charge:${other}:dossier`, 'dead-replica', 10_000)).toBe(true);
    const start = clock.now();
    const next = await drive(clock, gate.enter(other, 'dossier', start + 600_000), 25);
    expect(next.charged).toBe(true);
    expect(clock.now() - start).toBeGreaterThanOrEqual(10_000);
    expect(clock.now() - start).toBeLessThan(10_100);
    if (next.charged) await next.release();
  });
});

describe('cross-replica coalescing on a manual clock', () => {
  it("a follower on another replica polls on the clock and gets the leader's parked answer", async () => {
    const clock = new ManualClock();
    const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
    const replicaA = new Coalescer({ store, clock, distributed: true, pollMs: 20 });
    const replicaB = new Coalescer({ store, clock, distributed: true, pollMs: 20 });
    let finish!: (a: SharedAnswer) => void;
    let calls = 0;
    const call = () => {
      calls++;
      return new Promise<SharedAnswer>((r) => {
        finish = r;
      });
    };
    const park = (a: SharedAnswer) => a;
    const leader = replicaA.run('k', clock.now() + 60_000, call, park);
    await new Promise((r) => setImmediate(r));
    const follower = replicaB.run('k', clock.now() + 60_000, call, park);
    // Ten polls of the follower on the clock (200 ms of clock time), then the leader answers.
    for (let i = 0; i < 10; i++) {
      await new Promise((r) => setImmediate(r));
      if (clock.pendingSleeps > 0) clock.advance(20);
    }
    expect(calls).toBe(1);
    finish({ status: 200, headers: {}, body: Buffer.from('dossier') });
    const [a, b] = await drive(clock, Promise.all([leader, follower]), 20);
    expect(calls).toBe(1);
    expect(a.follower).toBe(false);
    expect(b.follower).toBe(true);
    expect(b.answer.body.toString()).toBe('dossier');
  });
});
