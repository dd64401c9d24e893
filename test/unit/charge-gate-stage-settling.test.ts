// The charge gate stage and a paid call answered before its record (issue 33): the company's lock
// is given back only once the record has settled (ctx.settling), not when the answer passes
// back out, so a read of the company that arrives in between waits and then goes covered; a
// shutdown (ChargeOutbox.close) waits for the release too. Without ctx.settling (a call that
// waited for its record) the lock goes before the stage returns, as before.
import { describe, expect, it } from 'vitest';
import { ManualClock, seededRandom } from '../../src/clock.ts';
import { ChargeGate } from '../../src/cost/charge-gate.ts';
import { ChargeOutbox } from '../../src/cost/charge-outbox.ts';
import { WindowTracker } from '../../src/cost/window-tracker.ts';
import { createLogger } from '../../src/logger.ts';
import type { RequestContext } from '../../src/pipeline/context.ts';
import type { PipelineDeps } from '../../src/pipeline/deps.ts';
import type { Answer } from '../../src/pipeline/outcome.ts';
import { SendConditions } from '../../src/pipeline/send-conditions.ts';
import { compose } from '../../src/pipeline/stage.ts';
import { chargeGate } from '../../src/pipeline/stages/charge-gate.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';

const INN = '7707083893';
const LOCK = `charge:${INN}:dossier`;

function setup() {
  const clock = new ManualClock();
  const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
  const windows = new WindowTracker({ store, clock, windowMs: 900_000, safetyMarginMs: 30_000 });
  const gate = new ChargeGate({ store, clock, windows, pollMs: 25, leaseMs: 10_000 });
  const outbox = new ChargeOutbox({ store, clock, stateDir: null });
  const deps = {
    clock,
    config: { store: { failoverWaitMs: 0 } },
    gate,
    logger: createLogger('silent'),
    metrics: { saved: () => {} },
    random: seededRandom(1),
    charges: { track: (work: Promise<unknown>) => outbox.track(work) },
  } as unknown as PipelineDeps;
  const ctx = () =>
    ({
      requestId: 'r',
      route: { name: 'company' },
      app: { name: 'crm' },
      shape: { kind: 'dossier', inn: INN, covered: 'dossier', opens: 'dossier' },
      sendWhen: new SendConditions(['charge']),
      signal: new AbortController().signal,
      deadline: clock.now() + 15_000,
      windows: { dossierUntil: 0, requisitesUntil: 0 },
    }) as unknown as RequestContext;
  const answer: Answer = { status: 200, headers: {}, body: Buffer.alloc(0), chargedMinor: 9900 };
  return { store, deps, outbox, ctx, answer };
}

describe('charge gate stage: the lock outlives the answer until the record settles', () => {
  it('held after the answer while ctx.settling runs; given back once it resolves; close waits', async () => {
    const { store, deps, outbox, ctx, answer } = setup();
    let settle!: () => void;
    const c = ctx();
    const out = await compose([
      chargeGate(deps),
      async (inner) => {
        inner.settling = new Promise<void>((resolve) => {
          settle = resolve;
        });
        return answer;
      },
    ])(c);
    expect(out).toBe(answer);
    // Answered, the record still running: another owner cannot take the company's lock.
    expect(await store.acquireLock(LOCK, 'someone-else', 10_000)).toBe(false);
    let closed = false;
    const closing = outbox.close(1_000).then(() => {
      closed = true;
    });
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(closed).toBe(false);
    settle();
    await closing;
    expect(await store.acquireLock(LOCK, 'someone-else', 10_000)).toBe(true);
  });

  it('without ctx.settling the lock is free when the stage returns', async () => {
    const { store, deps, ctx, answer } = setup();
    await compose([chargeGate(deps), async () => answer])(ctx());
    expect(await store.acquireLock(LOCK, 'someone-else', 10_000)).toBe(true);
  });
});
