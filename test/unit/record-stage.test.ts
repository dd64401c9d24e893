// The record stage's verdicts on a charged call's outcome, over the real ChargeBook, outbox and
// memory store: a charge is recorded, a proven no-charge released, and an answer that does not
// say (409 still executing, a 5xx without X-Charged-Minor, no answer at all) leaves the pending
// entry counted for the reconciler. Found in CI: a retry that met 409 released a hold the first
// attempt went on to spend (the gateway ledger then lacked an entry the upstream charged).
import { describe, expect, it } from 'vitest';
import { ManualClock, seededRandom } from '../../src/clock.ts';
import { BudgetGuard } from '../../src/cost/budget-guard.ts';
import { ChargeBook } from '../../src/cost/charge-book.ts';
import { ChargeOutbox } from '../../src/cost/charge-outbox.ts';
import { PriceBook } from '../../src/cost/price-book.ts';
import { WindowTracker } from '../../src/cost/window-tracker.ts';
import { createLogger } from '../../src/logger.ts';
import type { RequestContext } from '../../src/pipeline/context.ts';
import type { PipelineDeps } from '../../src/pipeline/deps.ts';
import { type Answer, type Outcome, unsent } from '../../src/pipeline/outcome.ts';
import { upstreamUnavailable } from '../../src/pipeline/refusals.ts';
import { SendConditions } from '../../src/pipeline/send-conditions.ts';
import { compose, type Stage, type StageFactory } from '../../src/pipeline/stage.ts';
import { record } from '../../src/pipeline/stages/record.ts';
import { retry } from '../../src/pipeline/stages/retry.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { UpstreamFailure } from '../../src/upstream/upstream-client.ts';

const INN = '7707083893';

type MoneySteps = ConstructorParameters<typeof ChargeOutbox>[0]['store'];

/**
 * A charged dossier read of app crm over the real ChargeBook, outbox and memory store, its charge
 * (key `key`, estimate 9900) opened: the deps and context the record stage runs with. `records`:
 * the outbox's store (default: the memory store itself).
 */
async function chargedCall(options: {
  key: string;
  appKey?: string;
  unknownFlag?: boolean;
  metrics?: unknown;
  records?: (store: MemoryStore) => MoneySteps;
}) {
  const clock = new ManualClock();
  const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
  const budgets = new BudgetGuard({ store, clock, timeZone: 'Europe/Moscow', global: {}, apps: new Map() });
  const outbox = new ChargeOutbox({ store: options.records?.(store) ?? store, clock, stateDir: null });
  const charges = new ChargeBook({
    store,
    budgets,
    outbox,
    clock,
    replicaId: 'r1',
    leaseMs: 10_000,
    windowMs: 900_000,
  });
  const windows = new WindowTracker({ store, clock, windowMs: 900_000, safetyMarginMs: 30_000 });
  const prices = new PriceBook({
    upstream: { request: async () => ({ status: 500, headers: {}, body: Buffer.alloc(0) }) as never },
    clock,
    refreshMs: 60_000,
    timeoutMs: 1000,
  });
  const deps = {
    clock,
    charges,
    windows,
    logger: createLogger('silent'),
    metrics: options.metrics ?? { charge: () => {}, saved: () => {} },
    prices,
    random: seededRandom(1),
  } as unknown as PipelineDeps;
  const opened = await charges.open({
    key: options.key,
    requestId: 'req',
    app: 'crm',
    operation: 'company',
    kind: 'dossier',
    inn: INN,
    estimateMinor: 9900,
    method: 'GET',
    target: `/v1/companies/${INN}`,
    body: null,
    opens: 'dossier',
  });
  if (!opened.ok) throw new Error('refused');
  const ctx = {
    route: { name: 'company' },
    app: { name: 'crm' },
    call: { idempotencyKey: options.appKey },
    shape: { kind: 'dossier', inn: INN, covered: 'dossier', opens: 'dossier' },
    charge: opened.charge,
    sendWhen: chargeOpened(),
    outcomeUnknown: options.unknownFlag ?? false,
    startedAt: clock.now(),
    idempotencyKey: options.key,
    deadline: clock.now() + 60_000,
    timeoutMs: 10_000,
  } as unknown as RequestContext;
  const counter = async () => (await store.readCounters(budgets.counterSpecs('crm').map((s) => s.key)))[0]!;
  return { clock, store, outbox, deps, ctx, counter };
}

async function run(outcome: Outcome | Stage, unknownFlag = false, below: StageFactory<PipelineDeps>[] = []) {
  const { clock, store, deps, ctx, counter } = await chargedCall({ key: 'gw1r-k', unknownFlag });
  const last: Stage = typeof outcome === 'function' ? outcome : async () => outcome;
  const done = compose([record(deps), ...below.map((stage) => stage(deps)), last])(ctx);
  // The retry stage sleeps on the manual clock between attempts: move it until the run ends.
  let ended = false;
  void done.finally(() => {
    ended = true;
  });
  while (!ended) {
    await new Promise((r) => setImmediate(r));
    clock.advance(1_000);
  }
  await done;
  // A gateway-keyed charge is recorded after its answer (ctx.settling).
  await ctx.settling;
  return {
    pending: await store.pendingCharges(),
    counter: await counter(),
    ledger: await store.readLedger(0, 2 ** 52),
  };
}

const answer = (status: number, headers: Record<string, string>, body: unknown = {}): Answer => ({
  status,
  headers,
  body: Buffer.from(JSON.stringify(body)),
});

describe('record stage', () => {
  it('a charged answer is recorded: ledger entry, spend, no hold, no pending entry', async () => {
    const r = await run(answer(200, { 'x-charged-minor': '9900' }));
    expect(r.ledger).toHaveLength(1);
    expect(r.counter).toMatchObject({ spentMinor: 9900, reservedMinor: 0 });
    expect(r.pending).toEqual([]);
  });

  it('an answer that says nothing was charged releases the hold', async () => {
    const r = await run(answer(404, { 'x-charged-minor': '0' }, { error: { code: 'not_found' } }));
    expect(r.counter).toMatchObject({ spentMinor: 0, reservedMinor: 0 });
    expect(r.pending).toEqual([]);
  });

  it('409 idempotency_in_progress keeps the charge counted for the reconciler', async () => {
    const r = await run(
      answer(409, { 'x-charged-minor': '0' }, { error: { code: 'idempotency_in_progress' } }),
    );
    expect(r.counter).toMatchObject({ spentMinor: 0, reservedMinor: 9900 });
    expect(r.pending).toHaveLength(1);
    expect(r.pending[0]!.leaseUntil).toBe(0);
  });

  it('a 5xx without X-Charged-Minor keeps it counted; one with X-Charged-Minor: 0 releases', async () => {
    const unknown = await run(answer(502, {}, { error: { code: 'bad_gateway' } }));
    expect(unknown.pending).toHaveLength(1);
    const told = await run(
      answer(503, { 'x-charged-minor': '0' }, { error: { code: 'billing_unavailable' } }),
    );
    expect(told.pending).toEqual([]);
    expect(told.counter.reservedMinor).toBe(0);
  });

  it('a call never sent (another replica leads, the client left while queued) releases the hold', async () => {
    for (const why of ['not_leader', 'client_gone', 'windows_disagree'] as const) {
      const r = await run(unsent(why));
      expect(r.counter).toMatchObject({ spentMinor: 0, reservedMinor: 0 });
      expect(r.pending).toEqual([]);
      expect(r.ledger).toEqual([]);
    }
  });

  it('a retry not sent because the client left keeps counted what the timed-out first attempt may have charged', async () => {
    // Before the send conditions were values, "client gone" was one exception for both cases, and
    // the record stage released the hold of a first attempt that may have been charged upstream.
    let attempts = 0;
    const upstream: Stage = async (ctx) => {
      attempts++;
      if (ctx.attempt === 0) throw new UpstreamFailure('timeout', 'no answer in time');
      return unsent('client_gone');
    };
    const r = await run(upstream, false, [retry]);
    expect(attempts).toBe(2);
    expect(r.counter).toMatchObject({ spentMinor: 0, reservedMinor: 9900 });
    expect(r.pending).toHaveLength(1);
  });

  it('no answer (a timeout) keeps it counted', async () => {
    const r = await run(upstreamUnavailable('timeout'), true);
    expect(r.counter).toMatchObject({ spentMinor: 0, reservedMinor: 9900 });
    expect(r.pending).toHaveLength(1);
  });
});

/** The budget stage's side of a charged call: its charge entry was opened (send condition `charge`). */
function chargeOpened(): SendConditions {
  const conditions = new SendConditions(['charge']);
  conditions.set('charge', Promise.resolve(true));
  return conditions;
}

describe('record stage: the record after the answer (issue 33)', () => {
  /** A charged call over a memory store whose recordCharge waits until `letGo` is called. */
  async function held(appKey?: string) {
    let letGo!: () => void;
    const gate = new Promise<void>((resolve) => {
      letGo = resolve;
    });
    let recording = false;
    const charged: number[] = [];
    const { store, outbox, deps, ctx, counter } = await chargedCall({
      key: 'gw1r-slow',
      ...(appKey ? { appKey } : {}),
      metrics: { charge: (_app: string, _kind: string, n: number) => charged.push(n), saved: () => {} },
      records: (store) => ({
        recordCharge: async (r: Parameters<MemoryStore['recordCharge']>[0]) => {
          recording = true;
          await gate;
          return store.recordCharge(r);
        },
        releaseCharge: (key: string) => store.releaseCharge(key),
      }),
    });
    const out = compose([record(deps), async () => answer(200, { 'x-charged-minor': '9900' })])(ctx);
    return { out, ctx, store, outbox, letGo, counter, charged, recording: () => recording };
  }

  it('answers charged before the record; the hold stays until it; a shutdown waits for it', async () => {
    const t = await held();
    const out = (await t.out) as Answer;
    // The record starts only once the answer is out (the turn after: on the memory and embedded
    // stores the record runs synchronously, so started before, it would end before the answer).
    expect(t.recording(), 'the record started before the answer').toBe(false);
    await new Promise((r) => setImmediate(r));
    expect(t.recording()).toBe(true);
    expect(out.chargedMinor).toBe(9900);
    expect(out.headers['x-charged-minor']).toBe('9900');
    expect(Date.parse(out.windowExpires!)).toBeGreaterThan(0);
    expect(t.ctx.settling).toBeInstanceOf(Promise);
    expect(await t.store.readLedger(0, 2 ** 52)).toEqual([]);
    expect(await t.counter()).toMatchObject({ spentMinor: 0, reservedMinor: 9900 });
    expect(t.charged).toEqual([]);

    let closed = false;
    const closing = t.outbox.close(1_000).then(() => {
      closed = true;
    });
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(closed, 'the shutdown did not wait for the record').toBe(false);
    t.letGo();
    await closing;
    await t.ctx.settling;
    expect(await t.store.readLedger(0, 2 ** 52)).toHaveLength(1);
    expect(await t.counter()).toMatchObject({ spentMinor: 9900, reservedMinor: 0 });
    expect(t.charged).toEqual([9900]);
    expect(await t.store.pendingCharges()).toEqual([]);
  });

  it("a call with the app's Idempotency-Key is answered only once its record is applied", async () => {
    const t = await held('app-key-1');
    let answered = false;
    void t.out.then(() => {
      answered = true;
    });
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(t.recording()).toBe(true);
    expect(answered).toBe(false);
    t.letGo();
    const out = (await t.out) as Answer;
    expect(out.chargedMinor).toBe(9900);
    expect(t.ctx.settling).toBeUndefined();
    expect(await t.store.readLedger(0, 2 ** 52)).toHaveLength(1);
  });
});
