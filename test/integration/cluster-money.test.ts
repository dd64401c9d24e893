// Two gateway replicas on a real Redis Cluster (three masters, one replica each, started by the
// test): 12 concurrent reads of a new company split over both cost one upstream call and one
// charge; a budget of two prices holds across the replicas; the other replica answers a HIT
// from the shared cache; state lands on every master. Then the master holding the `{money}` slot
// hands over to its replica in the middle of a stream of paid reads: afterwards the gateway's
// ledger equals the emulator's (no company charged twice, none charged unrecorded).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OffsetClock } from '../../src/clock.ts';
import { createStore } from '../../src/store/create-store.ts';
import type { Store } from '../../src/store/store.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type GatewayInstance, type Harness, startHarness } from '../helpers/gateway-harness.ts';
import { uniquePrefix } from '../helpers/redis.ts';
import { startTestCluster, type TestCluster } from '../helpers/redis-cluster.ts';

const PRICE = 9900;
const cluster: TestCluster | null = await startTestCluster({ replicas: true });
const prefix = uniquePrefix('cluster-gw');
const stores: Store[] = [];
let h: Harness;
let second: GatewayInstance;

function clusterStore(clock: OffsetClock): Store {
  const store = createStore({
    redisClusterNodes: cluster!.nodes,
    prefix,
    clock,
    cacheMaxBytes: 64 * 1024 * 1024,
    onError: () => {},
  });
  stores.push(store);
  return store;
}

beforeAll(async () => {
  if (!cluster) return;
  h = await startHarness({
    apps: [{ name: 'alpha' }, { name: 'capped', budgets: { day: { limitMinor: 2 * PRICE } } }],
    config: { cost: { reconcileIntervalMs: 200 } },
    store: clusterStore,
  });
  second = await h.addGateway(clusterStore(h.gateway.clock));
});
afterAll(async () => {
  if (!cluster) return;
  await h.close();
  for (const store of stores) await store.close().catch(() => {});
  await cluster.stop();
}, 60_000);

const read = (url: string, token: string, inn: string) =>
  fetch(`${url}/v1/companies/${inn}`, { headers: { authorization: `Bearer ${token}` } });

const maybe = cluster ? describe : describe.skip;

maybe('two gateways on a Redis Cluster', () => {
  it('12 concurrent reads of a new company over both replicas: one upstream call, one charge; a HIT on the other', async () => {
    const [inn] = knownInns(1, 3100);
    await h.emu('/faults', { route: 'company', count: 1, latency_ms: 300 });
    const urls = [h.gateway.url, second.url];
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) => read(urls[i % 2]!, h.tokens.alpha!, inn!)),
    );
    for (const r of results) expect(r.status).toBe(200);
    expect(new Set(await Promise.all(results.map((r) => r.text()))).size).toBe(1);
    const calls = (
      (await h.emu('/requests?route=company')) as { requests: Array<{ path: string }> }
    ).requests.filter((r) => r.path.includes(inn!));
    expect(calls).toHaveLength(1);
    expect((await h.ledger()).entries.filter((e) => e.inn === inn)).toHaveLength(1);
    const charged = results.map((r) => Number(r.headers.get('x-charged-minor')));
    expect(charged.reduce((a, b) => a + b, 0)).toBe(PRICE);
    // Once the window is recorded, the other replica answers from the shared cache.
    const again = await read(second.url, h.tokens.alpha!, inn!);
    expect(again.status).toBe(200);
    expect(again.headers.get('x-cache')).toBe('HIT');
  });

  it('a budget of two prices holds across the replicas: two charges, the rest 402', async () => {
    const inns = knownInns(10, 3200);
    const results = await Promise.all(
      inns.map((inn, i) => read([h.gateway.url, second.url][i % 2]!, h.tokens.capped!, inn)),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(2);
    expect(results.filter((r) => r.status === 402)).toHaveLength(8);
    const charges = (await h.ledger()).entries.filter((e) => inns.includes(e.inn));
    expect(charges.reduce((s, c) => s + c.amount_minor, 0)).toBe(2 * PRICE);
  });

  it('spreads the gateway state over all three masters', async () => {
    const perMaster = await cluster!.keysPerMaster(`${prefix}*`);
    expect(perMaster.size).toBe(3);
    for (const [port, n] of perMaster) expect(n, `keys on master ${port}`).toBeGreaterThan(0);
  });

  it('survives a failover of the {money} master: the gateway ledger equals the emulator ledger', async () => {
    const inns = knownInns(40, 3300);
    const urls = [h.gateway.url, second.url];
    const statuses: number[] = [];
    let next = 0;
    const worker = async (w: number) => {
      while (next < inns.length) {
        const inn = inns[next++]!;
        const res = await read(urls[w % 2]!, h.tokens.alpha!, inn);
        await res.arrayBuffer();
        statuses.push(res.status);
      }
    };
    // Each upstream read takes 100 ms, so the load (10 reads per worker) lasts longer than the
    // failover: the reads are fast enough otherwise to be all started before the slot moves.
    await h.emu('/faults', { route: 'company', count: inns.length, latency_ms: 100 });
    const load = Promise.all([0, 1, 2, 3].map(worker));
    while (next < 10) await new Promise((r) => setTimeout(r, 10));
    const moved = await cluster!.failover(`${prefix}{money}:ledger`);
    expect(moved.to).not.toBe(moved.from);
    expect(await cluster!.masterOf(`${prefix}{money}:ledger`)).toBe(moved.to);
    const doneAtHandover = next;
    await load;
    // The hand-over happened while reads were still being started (not after the load).
    expect(doneAtHandover).toBeLessThan(inns.length);
    // Every answer is a success or a clean refusal while the slot moved, never a 500.
    for (const s of statuses) expect([200, 503, 504]).toContain(s);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(20);

    const admin = { authorization: `Bearer ${h.adminToken}` };
    type AdminLedger = {
      entries: Array<{ inn: string; amount_minor: number }>;
      pending: unknown[];
      outbox: number;
    };
    const gatewayLedger = async () =>
      (await (await fetch(`${h.gateway.url}/admin/ledger`, { headers: admin })).json()) as AdminLedger;
    // Charges whose outcome was unknown during the hand-over are reconciled within a few passes.
    const deadline = Date.now() + 15_000;
    let ours = await gatewayLedger();
    while (ours.pending.length > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      ours = await gatewayLedger();
    }
    expect(ours.pending).toEqual([]);
    const theirs = (await h.ledger()).entries.filter((e) => inns.includes(e.inn));
    const mine = ours.entries.filter((e) => inns.includes(e.inn));
    const perInn = new Map<string, number>();
    for (const e of theirs) perInn.set(e.inn, (perInn.get(e.inn) ?? 0) + 1);
    for (const [inn, n] of perInn) expect(n, `upstream charges for ${inn}`).toBe(1);
    expect(mine.map((e) => e.inn).sort()).toEqual(theirs.map((e) => e.inn).sort());
    expect(mine.reduce((s, e) => s + e.amount_minor, 0)).toBe(theirs.reduce((s, e) => s + e.amount_minor, 0));
  });
});
