// Issue #10, scenario "a store step fails after the upstream answered", over REAL Redis with two
// replicas: replica A's store is wrapped by FaultyStore, which makes one money step of a request
// fail — 'before' (not applied) or 'after' (applied in Redis, the reply lost, as when Redis dies
// between running a script and answering). Replica B shares the Redis state and runs its own
// reconciler, so an entry A could not settle may be taken over by B (short leases) while A's
// outbox is still retrying it: the race the claim in recordCharge exists for. For a dossier
// read, a requisites read and a fresh check, each step failing each way; then, once both
// outboxes are empty and nothing is pending: per company, the gateway ledger equals the
// emulator's (0 lost, 0 double counted), the month's spend equals what the upstream charged
// and nothing stays reserved. (test/integration/money-store-faults.test.ts runs every k over the
// memory store; this file is the Redis scripts and the cross-replica race.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore } from '../../src/store/create-store.ts';
import type { RoleMethod, Store } from '../../src/store/index.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type FailMode, FaultyStore } from '../helpers/faulty-store.ts';
import { type GatewayInstance, type Harness, startHarness } from '../helpers/gateway-harness.ts';
import { deleteKeysUnder, startTestRedis, uniquePrefix } from '../helpers/redis.ts';

interface AdminLedger {
  entries: Array<{ inn: string | null; amount_minor: number; reconciled?: boolean }>;
  pending: unknown[];
  outbox: number;
}
interface AdminBudgets {
  budgets: Record<string, Array<{ period: string; spent_minor: number; reserved_minor: number }>>;
}

/** Record attempts A's store refuses in the long case: 1 + 5 outbox retries 500 ms apart. */
const LONG_REFUSALS = 6;

const redis = await startTestRedis();
const maybe = redis ? describe : describe.skip;

maybe('a money step lost on Redis, with a second replica reconciling', () => {
  const prefix = uniquePrefix('step-lost');
  const stores: Store[] = [];
  let faulty!: FaultyStore;
  let h: Harness;
  let b: GatewayInstance;
  let next = 0;
  const used = new Set<string>();
  const freshInn = (): string => {
    for (;;) {
      const [inn] = knownInns(1, 7000 + next++);
      if (!used.has(inn!)) {
        used.add(inn!);
        return inn!;
      }
    }
  };
  const redisStore = (clock: Parameters<typeof createStore>[0]['clock']) => {
    const s = createStore({
      redisUrl: redis!.url,
      prefix,
      clock,
      cacheMaxBytes: 8 * 1024 * 1024,
      onError: () => {},
    });
    stores.push(s);
    return s;
  };

  beforeAll(async () => {
    h = await startHarness({
      apps: [{ name: 'alpha' }],
      emulator: { checkSeconds: 0.05, checkWaitSeconds: 2 },
      config: {
        cost: { leaseMs: 1000, reconcileIntervalMs: 200 },
        store: { stateDir: null },
        // The gateway's check class counts on Redis's time, which h.advance() does not move (the
        // emulator's two cold checks a minute follow its advanced clock): room for this file's
        // checks and their replays within one real minute.
        limits: { key: { burst: 60 }, check: { limit: 20, burst: 20 } },
      },
      store: (clock) => {
        faulty = new FaultyStore(redisStore(clock));
        return faulty;
      },
    });
    b = await h.addGateway(redisStore(h.gateway.clock));
  });
  afterAll(async () => {
    await h?.close();
    for (const s of stores) await s.close().catch(() => {});
    if (redis) {
      await deleteKeysUnder(redis.url, [prefix]);
      await redis.stop();
    }
  });

  const admin = async <T>(url: string, path: string): Promise<T> =>
    (await (
      await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${h.adminToken}` } })
    ).json()) as T;

  /** Waits until neither replica holds an outbox and nothing is pending; returns the ms taken. */
  async function settled(): Promise<number> {
    const t0 = Date.now();
    for (;;) {
      const [a, bv] = [
        await admin<AdminLedger>(h.gateway.url, '/admin/ledger'),
        await admin<AdminLedger>(b.url, '/admin/ledger'),
      ];
      if (a.outbox === 0 && bv.outbox === 0 && a.pending.length === 0) return Date.now() - t0;
      expect(Date.now() - t0, 'outbox or pending entries never drained').toBeLessThan(15_000);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  const routes: Array<{ label: string; steps: RoleMethod[]; request: (inn: string) => Promise<Response> }> = [
    {
      label: 'dossier',
      steps: ['openCharge', 'recordCharge', 'releaseLock'],
      request: (inn) => h.call('alpha', `/v1/companies/${inn}`),
    },
    {
      label: 'requisites',
      steps: ['openCharge', 'recordCharge', 'releaseLock'],
      request: (inn) => h.call('alpha', `/v1/requisites/${inn}`),
    },
    {
      label: 'check',
      steps: ['openCharge', 'recordCharge'],
      request: (inn) => h.call('alpha', '/v1/check', { method: 'POST', body: JSON.stringify({ inn }) }),
    },
  ];

  it('every money step failing before or after: 0 lost, 0 double counted, budgets exact', async () => {
    const outcomes: string[] = [];
    const tookOver: string[] = [];
    const settleMs: number[] = [];
    for (const route of routes) {
      for (const step of route.steps) {
        for (const mode of ['before', 'after'] as FailMode[]) {
          const inn = freshInn();
          h.advance(61_000); // a fresh minute for the upstream's cold-check limit
          faulty.reset();
          faulty.failOn(step, 1, mode);
          const res = await route.request(inn);
          await res.arrayBuffer();
          settleMs.push(await settled());
          // The record of a call on the gateway's own key, and the company's lock after it, may
          // run after the answer (record stage): the step's fault is looked for once it ran.
          for (const t0 = Date.now(); faulty.faults.length === 0 && Date.now() - t0 < 5_000; )
            await new Promise((r) => setTimeout(r, 10));
          expect(
            faulty.faults.map((f) => `${f.method} ${f.mode}`),
            `${route.label} ${step} ${mode}`,
          ).toEqual([`${step} ${mode}`]);
          expect(res.status, `${route.label} ${step} ${mode}`).not.toBe(500);
          outcomes.push(
            `${route.label}/${step}/${mode}: ${res.status} x-charged ${res.headers.get('x-charged-minor')}`,
          );
        }
      }
      // A's store refuses the record for longer than a lease (6 tries, 2.5 s of outbox retries):
      // A's entry runs out of lease, a reconciler takes it over, replays the key and records it;
      // whichever record comes second finds the charge claimed and counts nothing.
      const inn = freshInn();
      h.advance(61_000);
      faulty.reset();
      for (let n = 1; n <= LONG_REFUSALS; n++) faulty.failOn('recordCharge', n, 'before');
      const res = await route.request(inn);
      const text = await res.text();
      expect(res.status, `${route.label} record refused for 2.5 s: ${text}`).toBeLessThan(300);
      settleMs.push(await settled());
      expect(faulty.faults).toHaveLength(LONG_REFUSALS);
      tookOver.push(inn);
    }
    console.info(
      `store step lost on Redis:\n  ${outcomes.join('\n  ')}\n  settled in ${settleMs.join(', ')} ms`,
    );
    const view = await admin<AdminLedger>(b.url, '/admin/ledger');
    const truth = await h.ledger();
    const byInn = (rows: Array<{ inn: string | null; amount: number }>) => {
      const m: Record<string, number> = {};
      for (const r of rows) m[r.inn ?? ''] = (m[r.inn ?? ''] ?? 0) + r.amount;
      return m;
    };
    expect(byInn(view.entries.map((e) => ({ inn: e.inn, amount: e.amount_minor })))).toEqual(
      byInn(truth.entries.map((e) => ({ inn: e.inn, amount: e.amount_minor }))),
    );
    expect(view.entries).toHaveLength(truth.totals.count);
    // In each long case a reconciler (on whichever replica held its lock) replayed the key while
    // A's outbox still held the record: two records of one key, one ledger entry.
    interface Entry {
      inn: string | null;
      idempotency_key?: string;
    }
    for (const inn of tookOver) {
      const entries = (view.entries as Entry[]).filter((e) => e.inn === inn);
      expect(entries, inn).toHaveLength(1);
      const key = entries[0]!.idempotency_key!;
      expect(
        h.logs.some((l) => l.includes('"charge reconciled"') && l.includes(key) && l.includes('"recorded"')),
        `${inn}: the reconciler replayed ${key}`,
      ).toBe(true);
    }
    const budgets = await admin<AdminBudgets>(b.url, '/admin/budgets');
    for (const row of budgets.budgets.alpha!) expect(row.reserved_minor).toBe(0);
    expect(budgets.budgets.alpha!.find((r) => r.period === 'month')!.spent_minor).toBe(
      truth.totals.amount_minor,
    );
  }, 50_000);
});
