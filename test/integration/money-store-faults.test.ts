// Store fault injection over the charge path (issue #10): for a dossier read, a requisites read
// and a fresh check, the k-th store call of the request fails — before it reaches the store
// (nothing applied) or after (applied, the reply lost) — for EVERY k the request makes. Whatever
// fails, once the outbox has flushed and the reconciler has run: no charge is lost, none is
// counted twice, and the budgets hold exactly what the upstream charged, with nothing left
// reserved or pending. The emulator's ledger is the truth.
//
// Two nets catch a record the store did not take: the local outbox (applied once the store
// answers again) and the reconciler (replays the pending entry's key). Mutation-checked: with
// either net removed this suite still passes (the other catches it); with both removed it fails
// for every route.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore } from '../../src/store/create-store.ts';
import type { RoleMethod } from '../../src/store/index.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type FailMode, FaultyStore } from '../helpers/faulty-store.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

interface LedgerView {
  entries: Array<{ inn: string | null; amount_minor: number }>;
  pending: unknown[];
  outbox: number;
}

interface BudgetView {
  budgets: Record<
    string,
    Array<{ scope: string; period: string; spent_minor: number; reserved_minor: number }>
  >;
}

const LEASE_MS = 60_000;

describe('a store fault at any step of the charge path', () => {
  let h: Harness;
  let faulty!: FaultyStore;
  let next = 0;
  const used = new Set<string>();
  /** A company no earlier request touched (knownInns of neighbouring starts can coincide). */
  const freshInn = (): string => {
    for (;;) {
      const [inn] = knownInns(1, 9000 + next++);
      if (!used.has(inn!)) {
        used.add(inn!);
        return inn!;
      }
    }
  };

  beforeAll(async () => {
    h = await startHarness({
      apps: [{ name: 'alpha' }],
      emulator: { checkSeconds: 0.05, checkWaitSeconds: 2 },
      // Long leases and a slow reconciler loop: no background store call lands inside the
      // request being counted; the test runs the reconciler itself (POST /admin/reconcile).
      config: { store: { failoverWaitMs: 0 }, cost: { leaseMs: LEASE_MS, reconcileIntervalMs: 60_000 } },
      store: (clock) => {
        faulty = new FaultyStore(createStore({ clock, cacheMaxBytes: 64 * 1024 * 1024 }));
        return faulty;
      },
    });
  });
  afterAll(() => h?.close());

  const admin = async <T>(path: string, method = 'GET'): Promise<T> => {
    const res = await fetch(`${h.gateway.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${h.adminToken}` },
    });
    return (await res.json()) as T;
  };

  /** Lets the outbox flush and the reconciler resolve everything the fault left behind. */
  async function settle(): Promise<LedgerView> {
    for (let i = 0; i < 100; i++) {
      // Leases of entries left in flight run out; the reconciler then takes them.
      h.advance(LEASE_MS + 1);
      await admin('/admin/reconcile', 'POST');
      const view = await admin<LedgerView>('/admin/ledger');
      if (view.pending.length === 0 && view.outbox === 0) return view;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('pending entries or outbox never drained');
  }

  async function check(
    label: string,
    moneyCalls: string[],
    request: (inn: string) => Promise<Response>,
  ): Promise<{ callsPerRequest: number; statuses: Record<string, number> }> {
    // One clean run counts the store calls the request makes.
    const dry = freshInn();
    h.advance(61_000); // a fresh minute for the upstream's two cold checks
    faulty.reset();
    expect((await request(dry)).status).toBeLessThan(300);
    const callsPerRequest = faulty.calls;
    expect(callsPerRequest).toBeGreaterThan(3);
    const statuses: Record<string, number> = {};
    const hit: Record<FailMode, Set<string>> = { before: new Set(), after: new Set() };
    // Every k of the clean run (and a few past it: calls shift by one or two between requests,
    // limiter reads are cached for 100 ms), then each money step by name, in both modes.
    const plans: Array<(mode: FailMode) => void> = [];
    for (let k = 1; k <= callsPerRequest + 4; k++) plans.push((mode) => faulty.failAt(k, mode));
    for (const method of moneyCalls) plans.push((mode) => faulty.failOn(method as RoleMethod, 1, mode));
    for (const mode of ['before', 'after'] as FailMode[]) {
      for (const [k, plan] of plans.entries()) {
        const inn = freshInn();
        h.advance(61_000);
        faulty.reset();
        plan(mode);
        const res = await request(inn);
        await res.arrayBuffer();
        // Calls vary a little between requests (limiter refreshes are cached for 100 ms): a
        // planned fault the request did not reach is dropped, not left for what follows.
        for (const f of faulty.faults) hit[mode].add(f.method);
        faulty.reset();
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        expect(res.status, `${label}: plan ${k} failing ${mode}`).not.toBe(500);
      }
    }
    // Every money step was made to fail in both ways.
    for (const mode of ['before', 'after'] as FailMode[])
      for (const method of moneyCalls) expect([...hit[mode]], `${label} ${mode}`).toContain(method);
    return { callsPerRequest, statuses };
  }

  async function expectBooksExact(): Promise<void> {
    const view = await settle();
    const upstream = await h.ledger();
    const byInn = (entries: Array<{ inn: string | null; amount: number }>) => {
      const m = new Map<string, number>();
      for (const e of entries) m.set(e.inn ?? '', (m.get(e.inn ?? '') ?? 0) + e.amount);
      return m;
    };
    const ours = byInn(view.entries.map((e) => ({ inn: e.inn, amount: e.amount_minor })));
    const truth = byInn(upstream.entries.map((e) => ({ inn: e.inn, amount: e.amount_minor })));
    // 0 lost, 0 double counted: every company's amount equal on both sides.
    expect(Object.fromEntries(ours)).toEqual(Object.fromEntries(truth));
    const budgets = await admin<BudgetView>('/admin/budgets');
    const month = budgets.budgets.alpha!.find((b) => b.period === 'month')!;
    expect(month.spent_minor).toBe(upstream.totals.amount_minor);
    expect(month.reserved_minor).toBe(0);
  }

  it('dossier read: every store call failing before or after', async () => {
    const { callsPerRequest, statuses } = await check(
      'dossier',
      ['windows', 'acquireLock', 'openCharge', 'recordCharge', 'releaseLock'],
      (inn) => h.call('alpha', `/v1/companies/${inn}`),
    );
    console.info(`dossier: ${callsPerRequest} store calls per request; statuses ${JSON.stringify(statuses)}`);
    await expectBooksExact();
  });

  it('requisites read: every store call failing before or after', async () => {
    const { callsPerRequest, statuses } = await check(
      'requisites',
      ['windows', 'acquireLock', 'openCharge', 'recordCharge', 'releaseLock'],
      (inn) => h.call('alpha', `/v1/requisites/${inn}`),
    );
    console.info(
      `requisites: ${callsPerRequest} store calls per request; statuses ${JSON.stringify(statuses)}`,
    );
    await expectBooksExact();
  });

  it('fresh check: every store call failing before or after', async () => {
    const { callsPerRequest, statuses } = await check('check', ['get', 'openCharge', 'recordCharge'], (inn) =>
      h.call('alpha', '/v1/check', { method: 'POST', body: JSON.stringify({ inn }) }),
    );
    console.info(`check: ${callsPerRequest} store calls per request; statuses ${JSON.stringify(statuses)}`);
    await expectBooksExact();
  });
});
