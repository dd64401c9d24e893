// Savings on record and statements on two gateway replicas sharing one Redis (REDIS_URL; skipped
// without Redis unless REQUIRE_REDIS=1): replica B's cache answers are summed in B's process and
// reach the shared counters by B's own periodic flush (no request to B needed), so replica A's
// statement shows them beside A's paid charges; a closed month computed on A is the copy B serves.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localDate } from '../../src/cost/budget-periods.ts';
import { monthBounds } from '../../src/finance/statements.ts';
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

interface Part {
  app: string;
  charges: { count: number; amount_minor: number };
  savings: { by_reason: Record<string, number> };
  requests: { served: number; unpaid: number };
}
const statement = async (url: string, month: string) =>
  (await (
    await fetch(`${url}/admin/statements/${month}`, { headers: { authorization: `Bearer ${h.adminToken}` } })
  ).json()) as { state: string; computed_at: string; apps: Part[]; total: Part };

describe('statements on two Redis replicas', () => {
  it("one replica's statement shows the other's savings and served requests once it flushed", async (ctx) => {
    if (!replicas) ctx.skip();
    const month = localDate(h.gateway.clock.now(), 'Europe/Moscow').slice(0, 7);
    const [a, b] = knownInns(2, 4500);
    const call = (url: string, app: string, path: string) =>
      fetch(`${url}${path}`, { headers: { authorization: `Bearer ${h.tokens[app]}` } });
    for (const inn of [a, b])
      expect((await call(h.gateway.url, 'alpha', `/v1/companies/${inn}`)).status).toBe(200);
    h.advance(16 * 60_000);
    for (const inn of [a, b, a]) {
      const r = await call(second.url, 'beta', `/v1/companies/${inn}`);
      expect(r.headers.get('x-cache')).toBe('HIT');
    }
    await eventually(async () => {
      const s = await statement(h.gateway.url, month);
      const beta = s.apps.find((p) => p.app === 'beta')!;
      expect(beta.savings.by_reason.cache).toBe(3 * 9900);
      expect(beta.requests).toMatchObject({ served: 3, unpaid: 3 });
      expect(s.apps.find((p) => p.app === 'alpha')!.charges).toEqual({
        count: 2,
        amount_minor: 2 * 9900,
        by_kind: [{ kind: 'dossier', count: 2, amount_minor: 2 * 9900 }],
      });
    }, 15_000);
  });

  it('a closed month stored by one replica is the copy the other serves', async (ctx) => {
    if (!replicas) ctx.skip();
    const month = localDate(h.gateway.clock.now(), 'Europe/Moscow').slice(0, 7);
    const bounds = monthBounds(month, 'Europe/Moscow')!;
    h.advance(bounds.closesAtMs + 60_000 - h.gateway.clock.now());
    const onA = await statement(h.gateway.url, month);
    expect(onA.state).toBe('closed');
    h.advance(60_000);
    const onB = await statement(second.url, month);
    expect(onB).toEqual(onA);
    expect(onB.total.charges.amount_minor).toBe(2 * 9900);
  });
});
