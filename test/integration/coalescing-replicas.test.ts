// Identical concurrent requests share one upstream call, across replicas with the Redis
// store: reads split over two gateway instances for a company nobody has read cost one call
// and one charge; the admin API purges a company from the shared cache.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import {
  type GatewayInstance,
  type Harness,
  type ReplicaHarness,
  startRedisReplicas,
} from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/redis.ts';

let replicas: ReplicaHarness | null;
let h: Harness;
let second: GatewayInstance;

beforeAll(async () => {
  replicas = await startRedisReplicas();
  if (replicas) ({ h, second } = replicas);
});
afterAll(() => replicas?.close());

describe('two replicas on one Redis', () => {
  it('12 identical reads split over two replicas: one upstream call, one charge', async (ctx) => {
    if (!replicas) ctx.skip();
    const [inn] = knownInns(1, 1100);
    await h.emu('/faults', { route: 'company', count: 1, latency_ms: 300 });
    const urls = [h.gateway.url, second.url];
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        fetch(`${urls[i % 2]}/v1/companies/${inn}`, {
          headers: { authorization: `Bearer ${h.tokens.alpha}` },
        }),
      ),
    );
    for (const r of results) expect(r.status).toBe(200);
    const bodies = new Set(await Promise.all(results.map((r) => r.text())));
    expect(bodies.size).toBe(1);
    const calls = (
      (await h.emu('/requests?route=company')) as { requests: Array<{ path: string }> }
    ).requests.filter((r) => r.path.includes(inn!));
    expect(calls).toHaveLength(1);
    expect((await h.ledger()).entries.filter((e) => e.inn === inn)).toHaveLength(1);
    const charged = results.map((r) => Number(r.headers.get('x-charged-minor')));
    expect(charged.reduce((a, b) => a + b, 0)).toBe(9900);
  });

  it('12 identical free reads (no-cache) split over two replicas: one upstream call, one key slot kept', async (ctx) => {
    if (!replicas) ctx.skip();
    // A free read asks for the cross-replica lead alongside its rate slot: a replica that finds
    // the lead taken gives its slot back and follows the leader's answer.
    const admin = { authorization: `Bearer ${h.adminToken}` };
    const keyUsed = async () => {
      const state = (await (await fetch(`${h.gateway.url}/admin/limits`, { headers: admin })).json()) as {
        classes: Array<{ name: string; used: number }>;
      };
      return state.classes.find((c) => c.name === 'key')?.used ?? -1;
    };
    const path = '/v1/banks/044525225';
    const before = await keyUsed();
    const callsBefore = ((await h.emu('/requests?route=bank')) as { requests: unknown[] }).requests.length;
    await h.emu('/faults', { route: 'bank', count: 1, latency_ms: 300 });
    const urls = [h.gateway.url, second.url];
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        fetch(`${urls[i % 2]}${path}`, {
          headers: { authorization: `Bearer ${h.tokens.alpha}`, 'cache-control': 'no-cache' },
        }),
      ),
    );
    for (const r of results) expect(r.status).toBe(200);
    expect(new Set(await Promise.all(results.map((r) => r.text()))).size).toBe(1);
    const calls = ((await h.emu('/requests?route=bank')) as { requests: unknown[] }).requests.length;
    expect(calls - callsBefore).toBe(1);
    expect(results.filter((r) => r.headers.get('x-cache') === 'COALESCED')).toHaveLength(11);
    expect((await keyUsed()) - before).toBe(1);
  });

  it('12 identical reads (no-cache) of a company inside its window over two replicas: one call, nothing left open', async (ctx) => {
    if (!replicas) ctx.skip();
    // A read its window covers asks for the lead alongside its rate slot, like a free route; a
    // replica that finds the lead taken releases its charge entry (it held nothing) and follows.
    const [inn] = knownInns(1, 1200);
    const path = `/v1/companies/${inn}`;
    const auth = { authorization: `Bearer ${h.tokens.alpha}` };
    expect((await fetch(`${h.gateway.url}${path}`, { headers: auth })).headers.get('x-charged-minor')).toBe(
      '9900',
    );
    const calls = async () =>
      ((await h.emu('/requests?route=company')) as { requests: Array<{ path: string }> }).requests.filter(
        (r) => r.path.includes(inn!),
      ).length;
    const callsBefore = await calls();
    await h.emu('/faults', { route: 'company', count: 1, latency_ms: 300 });
    const urls = [h.gateway.url, second.url];
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        fetch(`${urls[i % 2]}${path}`, { headers: { ...auth, 'cache-control': 'no-cache' } }),
      ),
    );
    for (const r of results) expect(r.status).toBe(200);
    expect(new Set(await Promise.all(results.map((r) => r.text()))).size).toBe(1);
    expect((await calls()) - callsBefore).toBe(1);
    expect(results.filter((r) => r.headers.get('x-cache') === 'COALESCED')).toHaveLength(11);
    expect(results.map((r) => r.headers.get('x-charged-minor'))).toEqual(Array(12).fill('0'));
    expect((await h.ledger()).entries.filter((e) => e.inn === inn)).toHaveLength(1);
    // Every charge entry opened for these reads (the leader's, and any follower's on the other
    // replica) is released: none is left for the reconciler.
    await eventually(async () => {
      const open = (await h.gateway.store.pendingCharges()).filter((p) => p.inn === inn);
      if (open.length > 0) throw new Error(`${open.length} charge entries still open`);
    }, 5_000);
    // ...released, not handed to the reconciler (whose replay would be one more upstream call).
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await calls()) - callsBefore).toBe(1);
  });

  it('a lead nobody on another replica waits for parks no copy of its answer in Redis', async (ctx) => {
    if (!replicas) ctx.skip();
    const store = h.gateway.store;
    const putBlob = store.putBlob.bind(store);
    const parked: string[] = [];
    store.putBlob = (key, value, ttlMs) => {
      parked.push(key);
      return putBlob(key, value, ttlMs);
    };
    try {
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${h.gateway.url}/v1/banks/044525225`, {
          headers: { authorization: `Bearer ${h.tokens.alpha}`, 'cache-control': 'no-cache' },
        });
        expect(res.status).toBe(200);
        expect(res.headers.get('x-cache')).toBe('MISS');
        await res.arrayBuffer();
      }
      // The lead is released after its answer would have been parked: wait for that.
      await eventually(async () => {
        if ((await store.get('coalesce:lock:bank:/v1/banks/044525225')) !== null)
          throw new Error('still led');
      }, 5_000);
      expect(parked).toEqual([]);
    } finally {
      store.putBlob = putBlob;
    }
  });

  it('the admin API purges a company from the shared cache for every replica', async (ctx) => {
    if (!replicas) ctx.skip();
    const [inn] = knownInns(1, 1100);
    const admin = { authorization: `Bearer ${h.adminToken}` };
    const purge = await fetch(`${h.gateway.url}/admin/cache/${inn}`, { method: 'DELETE', headers: admin });
    expect(purge.status).toBe(200);
    expect(((await purge.json()) as { purged: number }).purged).toBeGreaterThanOrEqual(1);
    const after = await fetch(`${second.url}/v1/companies/${inn}`, {
      headers: { authorization: `Bearer ${h.tokens.beta}` },
    });
    expect(after.headers.get('x-cache')).toBe('MISS');
    const stats = await fetch(`${second.url}/admin/cache/stats`, { headers: admin });
    expect(stats.status).toBe(200);
    const bad = await fetch(`${h.gateway.url}/admin/cache/7707083894`, { method: 'DELETE', headers: admin });
    expect(bad.status).toBe(422);
  });
});
