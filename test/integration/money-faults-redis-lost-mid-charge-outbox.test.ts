// Issue #10, scenario "Redis stopped while a paid call is in flight": a gateway on a private
// redis-server (never the shared one) sends a dossier read the emulator answers in 1.5 s; Redis is
// stopped while the call is upstream and started again EMPTY (nothing saved) later. Proves, with
// the emulator's ledger as the truth:
// - the client gets the paid answer (200 with the charge, not 503): the record waits in the local
//   outbox, and reaches the ledger (and the budgets) within 15 s of Redis's return;
// - a graceful shutdown while Redis is still down writes the outbox to store.stateDir, and the
//   next start (same stateDir, Redis back) replays it into the ledger and removes the file.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.ts';
import { createStore } from '../../src/store/create-store.ts';
import type { Store } from '../../src/store/store.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';
import { type PrivateRedis, startPrivateRedis, uniquePrefix } from '../helpers/redis.ts';

const UPSTREAM_LATENCY_MS = 1500;

interface AdminLedger {
  count: number;
  total_minor: number;
  entries: Array<{ inn: string; amount_minor: number; idempotency_key: string }>;
  pending: unknown[];
  outbox: number;
}
interface AdminBudgets {
  budgets: Record<string, Array<{ period: string; spent_minor: number; reserved_minor: number }>>;
}

const redis = await startPrivateRedis();
if (!redis) console.warn('\n!!! money-faults-redis-lost: NO redis-server, SKIPPED !!!\n');
const maybe = redis ? describe : describe.skip;

maybe('Redis lost while a paid call is in flight', () => {
  const prefix = uniquePrefix('redis-lost');
  const stores: Store[] = [];
  let dir = '';
  let h: Harness;
  const storeOn = (priv: PrivateRedis, clock: Clock) => {
    const store = createStore({ redisUrl: priv.url, prefix, clock, cacheMaxBytes: 8 * 1024 * 1024 });
    stores.push(store);
    return store;
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cpgw-state-'));
    h = await startHarness({
      apps: [{ name: 'alpha' }],
      config: {
        store: { stateDir: dir },
        server: { shutdownGraceMs: 1000 },
        cost: { leaseMs: 1000, reconcileIntervalMs: 200 },
      },
      store: (clock) => storeOn(redis!, clock),
    });
  });
  afterAll(async () => {
    await h?.close();
    for (const s of stores) await s.close().catch(() => {});
    await redis?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const admin = async <T>(url: string, path: string): Promise<T> =>
    (await (
      await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${h.adminToken}` } })
    ).json()) as T;

  /** Starts a read that the emulator holds 1.5 s, and stops Redis once it is upstream. */
  async function readWithRedisLost(url: string, inn: string): Promise<Response> {
    await h.emu('/faults', { route: 'company', latency_ms: UPSTREAM_LATENCY_MS, count: 1 });
    const answer = fetch(`${url}/v1/companies/${inn}`, {
      headers: { authorization: `Bearer ${h.tokens.alpha}` },
    });
    const t0 = Date.now();
    while (((await h.emu('/faults')) as { faults: unknown[] }).faults.length > 0) {
      expect(Date.now() - t0, 'the read never reached the upstream').toBeLessThan(5_000);
      await new Promise((r) => setTimeout(r, 20));
    }
    await redis!.stop();
    return answer;
  }

  it('the paid answer reaches the client, and its charge the ledger once Redis is back (empty)', async () => {
    const [inn] = knownInns(1, 5100);
    const res = await readWithRedisLost(h.gateway.url, inn!);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-charged-minor')).toBe('9900');
    expect(((await res.json()) as { company: { inn: string } }).company.inn).toBe(inn);
    await new Promise((r) => setTimeout(r, 1000));
    await redis!.start();
    const upAt = Date.now();
    let view!: AdminLedger;
    for (;;) {
      const res2 = await fetch(`${h.gateway.url}/admin/ledger`, {
        headers: { authorization: `Bearer ${h.adminToken}` },
      });
      if (res2.status === 200) {
        view = (await res2.json()) as AdminLedger;
        if (view.count > 0 && view.outbox === 0) break;
      } else await res2.arrayBuffer();
      expect(Date.now() - upAt, 'the charge never reached the ledger').toBeLessThan(15_000);
      await new Promise((r) => setTimeout(r, 20));
    }
    console.info(
      `redis lost mid-charge: entry in the ledger ${Date.now() - upAt} ms after Redis answered again`,
    );
    const truth = await h.ledger();
    expect(truth.totals).toMatchObject({ count: 1, amount_minor: 9900 });
    expect(view.entries.map((e) => [e.inn, e.amount_minor, e.idempotency_key])).toEqual(
      truth.entries.map((e) => [e.inn, e.amount_minor, e.idempotency_key]),
    );
    expect(view.pending).toEqual([]);
    const budgets = await admin<AdminBudgets>(h.gateway.url, '/admin/budgets');
    const month = budgets.budgets.alpha!.find((b) => b.period === 'month')!;
    expect(month).toMatchObject({ spent_minor: 9900, reserved_minor: 0 });
  }, 30_000);

  it('a graceful shutdown with Redis down keeps the outbox in stateDir; the next start replays it', async () => {
    const [inn] = knownInns(1, 5200);
    const res = await readWithRedisLost(h.gateway.url, inn!);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-charged-minor')).toBe('9900');
    await res.arrayBuffer();
    // Graceful shutdown of the only replica while Redis is still down.
    await h.gateway.server.close();
    const files = (await readdir(dir)).filter((f) => f.startsWith('outbox-'));
    expect(files).toHaveLength(1);
    const saved = (await readFile(join(dir, files[0]!), 'utf8')).trim().split('\n');
    expect(saved).toHaveLength(1);
    expect(JSON.parse(saved[0]!)).toMatchObject({ op: 'record', record: { amountMinor: 9900 } });

    // Redis back (empty); the next start with the same stateDir replays the file.
    await redis!.start();
    const next = await h.addGateway(storeOn(redis!, h.gateway.clock));
    const startedAt = Date.now();
    let view!: AdminLedger;
    for (;;) {
      view = await admin<AdminLedger>(next.url, '/admin/ledger');
      // The file goes once its operations are applied (just after the outbox empties).
      const left = (await readdir(dir)).filter((f) => f.startsWith('outbox-'));
      if (view.entries.some((e) => e.inn === inn) && view.outbox === 0 && left.length === 0) break;
      expect(Date.now() - startedAt, 'the saved charge never reached the ledger').toBeLessThan(15_000);
      await new Promise((r) => setTimeout(r, 20));
    }
    console.info(`outbox file replayed into the ledger ${Date.now() - startedAt} ms after the next start`);
    const truth = await h.ledger();
    const entry = truth.entries.find((e) => e.inn === inn)!;
    // Redis came back empty: the ledger holds exactly this charge, under the upstream's key.
    expect(view.entries.map((e) => [e.inn, e.amount_minor, e.idempotency_key])).toEqual([
      [inn, 9900, entry.idempotency_key],
    ]);
    expect(view.pending).toEqual([]);
    expect((await readdir(dir)).filter((f) => f.startsWith('outbox-'))).toEqual([]);
  }, 30_000);
});
