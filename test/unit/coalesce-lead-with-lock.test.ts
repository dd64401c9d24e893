// A paid read asks for its cross-replica lead alongside the company's lock (issue 33: one round
// trip, not two in a row; stages/coalesce.ts and stages/charge-gate.ts), on two replicas of one
// store: the coalesce and charge gate stages of each, and below them a stand-in for the budget
// and upstream stages that counts the calls that get that far (an open, then a send once every
// send condition holds).
// - A replica that does not lead never gets past the gate: no open, no call; it follows the
//   leader and is answered with its answer (one call between them).
// - A replica that took the company's lock but not the lead gives the lock back at once; when the
//   lead is let go without an answer, it leads and sends (no stale "not the leader" left from its
//   first ask: that once ended such a read in a 500).
import { describe, expect, it } from 'vitest';
import { ManualClock, seededRandom } from '../../src/clock.ts';
import { ChargeGate } from '../../src/cost/charge-gate.ts';
import { Coalescer } from '../../src/cost/coalescer.ts';
import { WindowTracker } from '../../src/cost/window-tracker.ts';
import { createLogger } from '../../src/logger.ts';
import type { RequestContext } from '../../src/pipeline/context.ts';
import type { PipelineDeps } from '../../src/pipeline/deps.ts';
import { type Answer, isAnswer, type Outcome, unsent } from '../../src/pipeline/outcome.ts';
import { SendConditions } from '../../src/pipeline/send-conditions.ts';
import { compose } from '../../src/pipeline/stage.ts';
import { chargeGate } from '../../src/pipeline/stages/charge-gate.ts';
import { coalesce } from '../../src/pipeline/stages/coalesce.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';

const INN = '7707083893';
const PATH = `/v1/companies/${INN}`;
const LEAD_LOCK = `coalesce:lock:company:${PATH}`;
const COMPANY_LOCK = `charge:${INN}:dossier`;

function setup(options: { lockLog?: string[] } = {}) {
  const clock = new ManualClock();
  const memory = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
  // With lockLog: every lock asked for is answered a turn later (a round trip), and logged.
  const log = options.lockLog;
  const store = !log
    ? memory
    : (new Proxy(memory, {
        get(target, prop) {
          if (prop === 'acquireLock')
            return async (key: string, owner: string, ms: number) => {
              const name = key === LEAD_LOCK ? 'lead' : key === COMPANY_LOCK ? 'lock' : key;
              log.push(`ask ${name}`);
              await new Promise((r) => setImmediate(r));
              const taken = await target.acquireLock(key, owner, ms);
              log.push(`answered ${name}`);
              return taken;
            };
          const value = Reflect.get(target, prop, target) as unknown;
          return typeof value === 'function' ? value.bind(target) : value;
        },
      }) as MemoryStore);
  const windows = new WindowTracker({ store, clock, windowMs: 900_000, safetyMarginMs: 30_000 });
  const reached: string[] = [];
  const replica = (name: string, answerWhen: Promise<void>) => {
    const deps = {
      clock,
      config: { store: { failoverWaitMs: 0 } },
      coalescer: new Coalescer({ store, clock, distributed: true, pollMs: 20 }),
      gate: new ChargeGate({ store, clock, windows, pollMs: 25, leaseMs: 10_000 }),
      logger: createLogger('silent'),
      metrics: { saved: () => {} },
      random: seededRandom(1),
      charges: { track: () => {} },
    } as unknown as PipelineDeps;
    // The budget and upstream stages' stand-in: the open, then the send once every condition holds.
    const below = async (ctx: RequestContext): Promise<Outcome> => {
      reached.push(`${name} opened`);
      const why = await ctx.sendWhen.unmet();
      if (why) return unsent(why);
      reached.push(`${name} sent`);
      await answerWhen;
      const answer: Answer = {
        status: 200,
        headers: { 'x-charged-minor': '9900' },
        body: Buffer.from(`dossier from ${name}`),
        chargedMinor: 9900,
      };
      return answer;
    };
    const run = compose([coalesce(deps), chargeGate(deps), below]);
    return () =>
      run({
        requestId: name,
        route: { name: 'company', method: 'GET', charge: { kind: 'dossier' } },
        call: { params: { inn: INN }, query: {} },
        pathAndQuery: PATH,
        app: { name: 'crm' },
        shape: { kind: 'dossier', inn: INN, covered: 'dossier', opens: 'dossier' },
        sendWhen: new SendConditions(['lead', 'windows', 'charge']),
        signal: new AbortController().signal,
        deadline: clock.now() + 60_000,
        windows: { dossierUntil: 0, requisitesUntil: 0 },
      } as unknown as RequestContext);
  };
  /** Turns of the event loop and clock steps of 20 ms until `done` settles. */
  const drive = async <T>(done: Promise<T>): Promise<T> => {
    let settled = false;
    void done.then(
      () => (settled = true),
      () => (settled = true),
    );
    for (let i = 0; i < 2_000 && !settled; i++) {
      await new Promise((r) => setImmediate(r));
      if (i % 5 === 4) clock.advance(20);
    }
    return done;
  };
  return { clock, store, reached, replica, drive };
}

const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

describe('a paid read asks for its lead alongside the company`s lock', () => {
  it('asks for both before either is answered: one round trip, not two in a row', async () => {
    const lockLog: string[] = [];
    const { reached, replica, drive } = setup({ lockLog });
    const out = await drive(replica('A', Promise.resolve())());
    expect(lockLog).toEqual(['ask lead', 'ask lock', 'answered lead', 'answered lock']);
    expect(reached).toEqual(['A opened', 'A sent']);
    expect(isAnswer(out) && out.body.toString()).toBe('dossier from A');
  });

  it('the replica that does not lead opens nothing and is answered with the leader`s answer', async () => {
    const { reached, replica, drive } = setup();
    let answer!: () => void;
    const answered = new Promise<void>((r) => {
      answer = r;
    });
    const a = replica('A', answered)();
    await turns(20);
    expect(reached).toEqual(['A opened', 'A sent']);
    const b = replica('B', answered)();
    await turns(20);
    answer();
    const [outA, outB] = await drive(Promise.all([a, b]));
    expect(reached).toEqual(['A opened', 'A sent']);
    expect(isAnswer(outA) && outA.body.toString()).toBe('dossier from A');
    expect(isAnswer(outB) && outB.body.toString()).toBe('dossier from A');
    expect(isAnswer(outB) && outB.cache).toBe('COALESCED');
  });

  it('the lock taken without the lead is given back at once; the lead let go, it leads and sends', async () => {
    const { store, reached, replica, drive } = setup();
    // Another replica leads and has not yet taken the company's lock.
    expect(await store.acquireLock(LEAD_LOCK, 'elsewhere', 10_000)).toBe(true);
    const b = replica('B', Promise.resolve())();
    await turns(20);
    // B took the lock with its ask, saw it does not lead, and gave it back: it is free.
    expect(reached).toEqual([]);
    expect(await store.acquireLock(COMPANY_LOCK, 'probe', 10_000)).toBe(true);
    await store.releaseLock(COMPANY_LOCK, 'probe');
    // The leader goes away with no answer parked: B takes the lead and makes the call.
    await store.releaseLock(LEAD_LOCK, 'elsewhere');
    const out = await drive(b);
    expect(reached).toEqual(['B opened', 'B sent']);
    expect(isAnswer(out) && out.body.toString()).toBe('dossier from B');
  });
});
