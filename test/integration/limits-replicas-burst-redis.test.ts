// Three gateway replicas on one real Redis, through real HTTP, the production key class (60 a
// minute, pacing 5 per 5 s) and searches at {limit: 5, burst: 5} (issue #12): the replicas' own
// price refreshes (GET /v1/me, which spends `key`) used to fill the key's pacing log, and only 2
// of 5 allowed searches started within 2 s. Now a class nobody competes for starts its calls at
// once: after every replica has refreshed its prices twice, 5 searches sent together to the
// three replicas with X-Max-Wait-Ms: 0 (start now or be refused) all start, and the 6th is
// refused by the search limit. The emulator's request log is the truth.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayInstance, type ReplicaHarness, startRedisReplicas } from '../helpers/gateway-harness.ts';

let replicas: ReplicaHarness | null;
let gateways: GatewayInstance[] = [];

beforeAll(async () => {
  replicas = await startRedisReplicas({
    apps: [{ name: 'alpha' }, { name: 'beta' }, { name: 'gamma' }],
    // Searches answer at once (also under the matrix's slow-search mode).
    emulator: { latency: {} },
    config: { limits: { search: { limit: 5, burst: 5 } } },
  });
  if (replicas) gateways = [replicas.h.gateway, replicas.second, await replicas.another()];
});
afterAll(() => replicas?.close());

describe('three replicas on one Redis: a burst of allowed searches', () => {
  it('5 searches start at once after the price refreshes; the 6th is refused by the search limit', async (ctx) => {
    if (!replicas) ctx.skip();
    const h = replicas!.h;
    const admin = { method: 'POST', headers: { authorization: `Bearer ${h.adminToken}` } };
    for (const g of gateways) expect((await fetch(`${g.url}/admin/prices/refresh`, admin)).status).toBe(200);
    const me = (await h.emu('/requests?route=me')) as { requests: unknown[] };
    expect(me.requests.length).toBeGreaterThanOrEqual(2 * gateways.length); // start-up + refresh

    const apps = ['alpha', 'beta', 'gamma'];
    const search = (i: number) =>
      fetch(`${gateways[i % gateways.length]!.url}/v1/search?q=${encodeURIComponent(`burst ${i}`)}`, {
        headers: { authorization: `Bearer ${h.tokens[apps[i % apps.length]!]}`, 'x-max-wait-ms': '0' },
      });
    const answers = await Promise.all([0, 1, 2, 3, 4].map(search));
    const statuses = answers.map((r) => r.status);
    await Promise.all(answers.map((r) => r.arrayBuffer()));
    const sixth = await search(5);
    const refusal = (await sixth.json()) as { error: { code: string; details: Record<string, unknown> } };

    const log = (await h.emu('/requests?route=search')) as { requests: Array<{ at_ms: number }> };
    const at = log.requests.map((r) => r.at_ms).sort((a, b) => a - b);
    console.log(
      `replicas burst: statuses ${statuses.join(',')}; ` +
        `${at.length} searches upstream within ${(at.at(-1) ?? 0) - (at[0] ?? 0)} ms; 6th: ${sixth.status} ${JSON.stringify(refusal.error.details)}`,
    );
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    expect(at.length).toBe(5);
    expect(sixth.status).toBe(429);
    expect(refusal.error).toMatchObject({
      code: 'rate_limited',
      details: { limit: 'search', reason: 'deadline' },
    });
  });
});
