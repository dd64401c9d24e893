// Budgets as data across replicas on one Redis (store and finance store shared, as main.ts sets
// them up), over real sockets: finance lowers a cap on replica A and, within 1 s, replica B
// refuses the next over-cap paid call 402 budget_exceeded (nothing sent upstream); the audit
// entry, read on B, names the actor, the reason and the before/after; B's gauges show the new
// cap; a viewer's PUT on B is 403 and changes nothing. A replica that never hears the bus message
// (its subscription dropped) still obeys within 1 s: the reserve path checks the settings version.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUDGETS_CHANNEL } from '../../src/finance/budget-overrides.ts';
import type { Store } from '../../src/store/store.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type GatewayInstance, type ReplicaHarness, startRedisReplicas } from '../helpers/gateway-harness.ts';

const DOSSIER = 9900;
const APPLY_WITHIN_MS = 1000;

interface Envelope {
  error: { code: string; details: Record<string, unknown> };
}

const r: ReplicaHarness | null = await startRedisReplicas({
  apps: [{ name: 'crm', budgets: { day: { limitMinor: 10 * DOSSIER } } }],
  adminTokens: [
    { name: 'fin', role: 'finance' },
    { name: 'view', role: 'viewer' },
  ],
  config: { metrics: { sharedReadMinIntervalMs: 0 } },
});

/** The same store, except that it never hears budget announcements (a replica that missed them). */
function deaf(store: Store): Store {
  return new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop === 'subscribe')
        return (channel: string, handler: (m: string) => void) =>
          channel === BUDGETS_CHANNEL ? Promise.resolve(async () => {}) : target.subscribe(channel, handler);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe.skipIf(!r)('budgets as data on two replicas sharing Redis', () => {
  const { h, second: b } = r!;
  const a = h.gateway;
  afterAll(() => r?.close());

  let next = 9000;
  const paid = (g: GatewayInstance) =>
    fetch(`${g.url}/v1/companies/${knownInns(1, next++)[0]}`, {
      headers: { authorization: `Bearer ${h.tokens.crm}` },
    });
  const admin = (g: GatewayInstance, token: string, method: string, path: string, body?: unknown) =>
    fetch(`${g.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
  const putDay = async (g: GatewayInstance, limit: number, reason: string) => {
    const res = await admin(g, h.adminTokens.fin!, 'PUT', '/admin/budgets/crm/day', {
      limit_minor: limit,
      reason,
    });
    expect(res.status).toBe(200);
    return Date.now();
  };
  const waitUntil = (at: number) => new Promise((res) => setTimeout(res, Math.max(0, at - Date.now())));

  let c: GatewayInstance;
  beforeAll(async () => {
    c = await h.addGateway(deaf(a.store));
  });

  it('finance lowers the cap on A; within 1 s B refuses the next over-cap paid call', async () => {
    expect((await paid(b)).status).toBe(200);
    const changedAt = await putDay(a, DOSSIER, 'freeze after overspend');
    await waitUntil(changedAt + APPLY_WITHIN_MS);
    const upstream = await h.upstreamCount();
    const refused = await paid(b);
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as Envelope).error).toMatchObject({
      code: 'budget_exceeded',
      details: { app: 'crm', scope: 'app', period: 'day', limit_minor: DOSSIER, spent_minor: DOSSIER },
    });
    expect(await h.upstreamCount()).toBe(upstream);
  });

  it('the audit entry, read on B, names the actor, the reason and the before/after', async () => {
    const res = await admin(b, h.adminTokens.view!, 'GET', '/admin/audit?action=budget_set');
    const { entries } = (await res.json()) as { entries: Array<Record<string, unknown>> };
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      actor: 'fin',
      role: 'finance',
      target: 'budget:crm:day',
      reason: 'freeze after overspend',
      before: { limit_minor: 10 * DOSSIER, source: 'config', version: 0 },
      after: { limit_minor: DOSSIER, source: 'admin', version: 1 },
    });
  });

  it("B's budgets and gauges show the new cap", async () => {
    const res = await admin(b, h.adminTokens.view!, 'GET', '/admin/budgets');
    const body = (await res.json()) as { budgets: Record<string, Array<Record<string, unknown>>> };
    expect(body.budgets.crm!.find((x) => x.period === 'day')).toMatchObject({
      limit_minor: DOSSIER,
      source: 'admin',
      version: 1,
      updated_by: 'fin',
    });
    const metrics = await (await fetch(`${b.url}/metrics`)).text();
    expect(metrics).toContain(`cpgw_budget_limit_minor{app="crm",period="day"} ${DOSSIER}`);
  });

  it("a viewer's PUT on B is 403 and changes nothing", async () => {
    const res = await admin(b, h.adminTokens.view!, 'PUT', '/admin/budgets/crm/day', {
      limit_minor: 0,
      reason: 'nope',
    });
    expect(res.status).toBe(403);
    expect(((await res.json()) as Envelope).error.code).toBe('feature_unavailable');
    const audit = await admin(a, h.adminTokens.fin!, 'GET', '/admin/audit');
    expect(((await audit.json()) as { count: number }).count).toBe(1);
  });

  it('a replica that missed the bus message still obeys within 1 s (settings version on the reserve path)', async () => {
    const raisedAt = await putDay(a, 20 * DOSSIER, 'raise');
    await waitUntil(raisedAt + APPLY_WITHIN_MS);
    expect((await paid(c)).status).toBe(200);
    const frozenAt = await putDay(b, 0, 'stop');
    await waitUntil(frozenAt + APPLY_WITHIN_MS);
    const refused = await paid(c);
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as Envelope).error.details).toMatchObject({ limit_minor: 0 });
  });
});
