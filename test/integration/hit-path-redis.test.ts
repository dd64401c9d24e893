// The cache-hit path on the Redis store: each replica answers repeat reads from its in-process
// tier without a Redis round trip, and a purge made on one replica reaches the other's tier, so
// the hit path never serves a purged company once the purge message arrived.
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
  replicas = await startRedisReplicas({}, 16 * 1024 * 1024);
  if (replicas) ({ h, second } = replicas);
});
afterAll(() => replicas?.close());

const get = (url: string, path: string, token: string) =>
  fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } });

describe('the hit path on two Redis replicas', () => {
  it('both replicas answer HITs; a purge on one is obeyed by the other', async (ctx) => {
    if (!replicas) ctx.skip();
    const [inn] = knownInns(1, 1300);
    const path = `/v1/companies/${inn}`;
    const a = h.gateway.url;
    const b = second.url;
    const token = h.tokens.alpha!;
    expect((await get(a, path, token)).headers.get('x-cache')).toBe('MISS');
    const bodyA = await (await get(a, path, token)).text();
    for (let i = 0; i < 3; i++) {
      const res = await get(b, path, token);
      expect(res.headers.get('x-cache')).toBe('HIT');
      expect(await res.text()).toBe(bodyA);
    }
    // B's in-process tier holds the entry now: its HITs make no Redis round trip for the cache.
    const peek = second.store.cachePeek;
    expect(peek).toBeTypeOf('function');
    expect(peek!.call(second.store, `company:${inn}`)).not.toBeNull();

    const purge = await fetch(`${a}/admin/cache/${inn}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${h.adminToken}` },
    });
    expect(purge.status).toBe(200);
    await eventually(async () => {
      expect(peek!.call(second.store, `company:${inn}`)).toBeNull();
    }, 2_000);
    const after = await get(b, path, token);
    expect(after.headers.get('x-cache')).toBe('MISS');
  });
});
