// What the gateway answers about checks and accounts by itself (issue #13): without a webhook it
// polls the upstream once for all apps; an app's webhook that fails is retried on the schedule
// and visible in /admin/webhooks; HEAD on a paid route never spends; openapi servers name the
// gateway; /v1/me shows each app its own scopes, the wallet only with read:account.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';
import { checkPolls, startReceiver, until } from '../helpers/webhook-receiver.ts';

describe('no upstream webhook', () => {
  let h: Harness;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    rx = await startReceiver({ '/alpha': [500, 503] });
    h = await startHarness({
      emulator: { checkSeconds: 1, checkWaitSeconds: 0.05 },
      apps: [
        { name: 'alpha', webhook: { url: `${rx.url}/alpha` } },
        { name: 'beta', scopes: ['read:companies', 'read:checks', 'read:account'] },
      ],
      config: { webhooks: { workerIntervalMs: 50, retryDelaysMs: [0, 300, 300] } },
      webhookSecrets: { upstream: [], apps: { alpha: 'alpha-secret' } },
    });
  });
  afterAll(async () => {
    await h.close();
    await rx.close();
  });

  it('the gateway polls the check once for both apps, after Retry-After; the app webhook is retried until 2xx', async () => {
    const [inn] = knownInns(1, 740);
    const a = await h.call('alpha', '/v1/check', { method: 'POST', body: JSON.stringify({ inn }) });
    const b = await h.call('beta', '/v1/check', { method: 'POST', body: JSON.stringify({ inn }) });
    expect([a.status, b.status]).toEqual([202, 202]);
    const { check_id: id } = (await a.json()) as { check_id: string };
    const event = await until(() => rx.received.find((r) => r.headers['x-service-attempt'] === '3'), 6_000);
    expect(JSON.parse(event.body.toString()).data.check_id).toBe(id);
    // Two refusals, then delivered on the third attempt; one gateway poll served both apps.
    expect(rx.received).toHaveLength(3);
    expect(await checkPolls(h)).toBe(1);
    for (const app of ['alpha', 'beta']) {
      const res = await h.call(app, `/v1/checks/${id}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-cache')).toBe('HIT');
    }
    expect(await checkPolls(h)).toBe(1);
    const admin = (await (
      await fetch(`${h.gateway.url}/admin/webhooks`, { headers: { authorization: `Bearer ${h.adminToken}` } })
    ).json()) as { deliveries: Array<{ state: string; attempts: Array<{ status: number }> }> };
    expect(admin.deliveries[0]!.state).toBe('delivered');
    expect(admin.deliveries[0]!.attempts.map((x) => x.status)).toEqual([500, 503, 200]);
    const metrics = await (await fetch(`${h.gateway.url}/metrics`)).text();
    expect(metrics).toContain('cpgw_webhook_deliveries_total{app="alpha",result="retry"} 2');
    expect(metrics).toContain('cpgw_webhook_deliveries_total{app="alpha",result="delivered"} 1');
  });

  it('HEAD on a paid route: 504 not_cached with no upstream call or charge; after a GET, served from the cache', async () => {
    const [inn] = knownInns(1, 750);
    const before = await h.upstreamCount();
    const ledger = (await h.ledger()).totals.count;
    const head = await h.call('alpha', `/v1/companies/${inn}`, { method: 'HEAD' });
    expect(head.status).toBe(504);
    expect(await h.upstreamCount()).toBe(before);
    expect((await h.ledger()).totals.count).toBe(ledger);
    expect((await h.call('alpha', `/v1/companies/${inn}`)).status).toBe(200);
    const charged = (await h.ledger()).totals.count;
    const after = await h.upstreamCount();
    const hit = await h.call('alpha', `/v1/companies/${inn}`, { method: 'HEAD' });
    expect(hit.status).toBe(200);
    expect(hit.headers.get('x-cache')).toBe('HIT');
    expect(await h.upstreamCount()).toBe(after);
    expect((await h.ledger()).totals.count).toBe(charged);
  });

  it('openapi servers name the gateway', async () => {
    const doc = (await (await fetch(`${h.gateway.url}/v1/openapi.json`)).json()) as {
      servers: Array<{ url: string }>;
    };
    expect(doc.servers).toEqual([{ url: h.gateway.url }]);
  });

  it('/v1/me: own scopes and no wallet without read:account; the account with it', async () => {
    const alpha = (await (await h.call('alpha', '/v1/me')).json()) as {
      key: { scopes: string[] };
      wallet: unknown;
      gateway: { scopes: string[] };
    };
    expect(alpha.key.scopes).toEqual(['read:companies', 'read:checks', 'read:persons']);
    expect(alpha.wallet).toBeNull();
    const beta = (await (await h.call('beta', '/v1/me')).json()) as {
      key: { scopes: string[] };
      wallet: { balance_minor: number } | null;
    };
    expect(beta.wallet?.balance_minor).toBeTypeOf('number');
    expect(beta.key.scopes).toContain('read:persons'); // the upstream key's own scopes
  });
});
