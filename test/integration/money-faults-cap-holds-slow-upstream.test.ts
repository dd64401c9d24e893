// Issue #10, scenario "upstream slower than the timeout": the emulator answers dossier reads in
// 1.5 s, the gateway gives up after 1 s, the app's day cap is two dossier prices, and it sends
// 3 rounds of 4 concurrent reads of new companies across two replicas on one real Redis. The
// upstream charges every call it received (the gateway timed out, the emulator did not), so a
// timeout is an unknown outcome that must stay counted. Proves, with the emulator's ledger as
// the truth: the upstream never charges more than the cap; every call past it is refused 402
// budget_exceeded (never a 500); and once the reconciler has replayed the keys, the gateway
// ledger equals the emulator's (count and amount), nothing is pending and nothing reserved.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type ReplicaHarness, startRedisReplicas } from '../helpers/gateway-harness.ts';

const DOSSIER = 9900;
const CAP = 2 * DOSSIER;
const UPSTREAM_LATENCY_MS = 1500;
const GATEWAY_TIMEOUT_MS = 1000;

interface AdminLedger {
  count: number;
  total_minor: number;
  entries: Array<{ inn: string; amount_minor: number; reconciled?: boolean }>;
  pending: Array<{ inn: string; state: string }>;
  outbox: number;
}
interface AdminBudgets {
  budgets: Record<string, Array<{ period: string; spent_minor: number; reserved_minor: number }>>;
}

const replicas = await startRedisReplicas({
  apps: [{ name: 'capped', budgets: { day: { limitMinor: CAP } } }],
  config: {
    upstream: { timeoutMs: GATEWAY_TIMEOUT_MS },
    cost: { leaseMs: 1000, reconcileIntervalMs: 200 },
    store: { stateDir: null },
  },
});
const maybe = replicas ? describe : describe.skip;

maybe('a day cap against an upstream slower than the gateway timeout', () => {
  let r: ReplicaHarness;
  beforeAll(async () => {
    r = replicas!;
    // Every dossier read upstream takes 1.5 s (the reconciler's replays are answered from the
    // emulator's idempotency store and skip the fault).
    await r.h.emu('/faults', { route: 'company', latency_ms: UPSTREAM_LATENCY_MS, count: 1000 });
  });
  afterAll(() => r?.close());

  const admin = async <T>(url: string, path: string): Promise<T> =>
    (await (
      await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${r.h.adminToken}` } })
    ).json()) as T;

  it('3 rounds of 4 concurrent new companies: upstream spend <= cap, 402 past it, books equal after reconciliation', async () => {
    const urls = [r.h.gateway.url, r.second.url];
    const statuses: number[] = [];
    const codes: string[] = [];
    for (let round = 0; round < 3; round++) {
      const inns = knownInns(4, 3000 + round * 10);
      const answers = await Promise.all(
        inns.map(async (inn, i) => {
          const res = await fetch(`${urls[i % 2]}/v1/companies/${inn}`, {
            headers: { authorization: `Bearer ${r.h.tokens.capped}` },
          });
          const body = (await res.json()) as { error?: { code: string } };
          return { status: res.status, code: body.error?.code ?? 'ok' };
        }),
      );
      for (const a of answers) {
        statuses.push(a.status);
        codes.push(a.code);
      }
      console.info(`slow upstream, round ${round + 1}: ${JSON.stringify(answers.map((a) => a.status))}`);
      // The upstream never passes the cap, whatever the gateway saw.
      expect((await r.h.ledger()).totals.amount_minor).toBeLessThanOrEqual(CAP);
    }
    const roundsDoneAt = Date.now();
    console.info(`slow upstream: statuses ${JSON.stringify(statuses)} codes ${JSON.stringify(codes)}`);
    // Only two calls fit the cap; they timed out (504). Every other call was refused 402: the
    // unknown outcomes stayed counted, also in rounds 2 and 3. No 500s.
    expect(statuses.filter((s) => s >= 500 && s !== 504)).toEqual([]);
    expect(statuses.filter((s) => s === 402)).toHaveLength(10);
    expect(codes.filter((c) => c === 'budget_exceeded')).toHaveLength(10);

    // Reconciliation: the replays find the charges; the gateway ledger then equals the upstream's.
    let view!: AdminLedger;
    for (;;) {
      view = await admin<AdminLedger>(r.second.url, '/admin/ledger');
      if (view.pending.length === 0 && view.outbox === 0) break;
      expect(Date.now() - roundsDoneAt, 'reconciliation took too long').toBeLessThan(20_000);
      await new Promise((res) => setTimeout(res, 100));
    }
    console.info(`slow upstream: reconciled ${Date.now() - roundsDoneAt} ms after the last round`);
    const truth = await r.h.ledger();
    expect(truth.totals.amount_minor).toBeLessThanOrEqual(CAP);
    expect(truth.totals.count).toBeGreaterThan(0);
    expect(view.count).toBe(truth.totals.count);
    expect(view.total_minor).toBe(truth.totals.amount_minor);
    expect(view.entries.map((e) => e.inn).sort()).toEqual(truth.entries.map((e) => e.inn).sort());
    // Those charges came back through the reconciler: the calls themselves never saw an answer.
    expect(view.entries.every((e) => e.reconciled === true)).toBe(true);
    const budgets = await admin<AdminBudgets>(r.h.gateway.url, '/admin/budgets');
    for (const b of budgets.budgets.capped!) expect(b.reserved_minor).toBe(0);
    // The month (a run across midnight in cost.timeZone starts a new, empty day).
    expect(budgets.budgets.capped!.find((b) => b.period === 'month')!.spent_minor).toBe(
      truth.totals.amount_minor,
    );
    // Spent stays spent: a fourth try is refused before it reaches the upstream.
    const before = await r.h.upstreamCount();
    const late = await fetch(`${r.second.url}/v1/companies/${knownInns(1, 3100)[0]}`, {
      headers: { authorization: `Bearer ${r.h.tokens.capped}` },
    });
    expect(late.status).toBe(402);
    expect(await r.h.upstreamCount()).toBe(before);
  }, 45_000);
});
