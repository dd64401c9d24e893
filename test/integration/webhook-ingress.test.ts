// The webhook ingress (issue #13): forged signatures and timestamps 400 s off are refused, a
// replayed event id is dropped, a rotation's second secret is accepted, and a delivery that
// arrives while the gateway restarts is retried by the emulator and processed once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signatureHeader } from '../../src/checks/webhook-signature.ts';
import { createLogger } from '../../src/logger.ts';
import { buildServer } from '../../src/server.ts';
import { UpstreamClient } from '../../src/upstream/upstream-client.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness, UPSTREAM_KEY } from '../helpers/gateway-harness.ts';
import { checkPolls, startReceiver, until } from '../helpers/webhook-receiver.ts';

const SECRETS = { upstream: ['new-secret'], apps: { alpha: 'alpha-secret' } };

const metric = async (h: Harness, result: string) => {
  const text = await (await fetch(`${h.gateway.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`cpgw_webhook_events_total{result="${result}"}`));
  return Number(line?.split(' ').at(-1) ?? Number.NaN);
};

describe('webhook ingress', () => {
  let h: Harness;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    rx = await startReceiver();
    h = await startHarness({
      emulator: { checkSeconds: 1, checkWaitSeconds: 0.05, webhookRetryDelaysMs: [1_500, 1_500, 1_500] },
      apps: [{ name: 'alpha', webhook: { url: `${rx.url}/alpha` } }, { name: 'beta' }],
      webhookSecrets: SECRETS,
    });
  });
  afterAll(async () => {
    await h.close();
    await rx.close();
  });

  const send = (body: string, header: string) =>
    fetch(`${h.gateway.url}/webhooks/upstream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-signature': header },
      body,
    });
  const event = (id: string) =>
    JSON.stringify({
      id,
      event: 'check.completed',
      created_at: new Date().toISOString(),
      data: { check_id: '11111111-1111-4111-8111-111111111111', inn: '7707083893', found: true, dossier: {} },
    });
  const now = () => Math.floor(h.gateway.clock.now() / 1000);

  it('refuses a forged signature, a missing one and timestamps 400 s in the past or the future', async () => {
    const body = event('aaaaaaaa-0000-4000-8000-000000000001');
    expect((await send(body, signatureHeader(['wrong-secret'], now(), body))).status).toBe(401);
    expect((await send(body, `t=${now()}`)).status).toBe(401);
    // Signed over another body.
    expect((await send(body, signatureHeader(SECRETS.upstream, now(), `${body} `))).status).toBe(401);
    expect((await send(body, signatureHeader(SECRETS.upstream, now() - 400, body))).status).toBe(400);
    expect((await send(body, signatureHeader(SECRETS.upstream, now() + 400, body))).status).toBe(400);
    expect(await metric(h, 'bad_signature')).toBe(3);
    expect(await metric(h, 'stale')).toBe(2);
    expect(await metric(h, 'accepted')).toBe(0);
  });

  it('accepts either of two v1 values (rotation) and drops a replayed event id', async () => {
    const body = event('aaaaaaaa-0000-4000-8000-000000000002');
    const header = signatureHeader(['old-secret', 'new-secret'], now(), body);
    const first = await send(body, header);
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ received: true, duplicate: false });
    const again = await send(body, signatureHeader(SECRETS.upstream, now(), body));
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ received: true, duplicate: true });
    expect(await metric(h, 'accepted')).toBe(1);
    expect(await metric(h, 'duplicate')).toBe(1);
  });

  it('a delivery that arrives while the gateway restarts is retried by the emulator and processed once', async () => {
    const port = Number(new URL(h.gateway.url).port);
    await h.emu('/webhooks/target', {
      url: `${h.gateway.url}/webhooks/upstream`,
      secrets: ['old-secret', 'new-secret'],
    });
    const [inn] = knownInns(1, 720);
    const created = await h.call('alpha', '/v1/check', { method: 'POST', body: JSON.stringify({ inn }) });
    expect(created.status).toBe(202);
    const { check_id: id } = (await created.json()) as { check_id: string };
    expect(
      (await h.call('beta', '/v1/check', { method: 'POST', body: JSON.stringify({ inn }) })).status,
    ).toBe(202);
    // The gateway goes down before the check completes (its store survives: a shared store).
    await h.gateway.server.close();
    await until(async () => {
      const d = (await h.emu('/webhooks')) as { deliveries: Array<{ attempts: unknown[] }> };
      return d.deliveries[0]?.attempts.length === 1 ? true : undefined;
    }, 5_000);
    const upstream = new UpstreamClient({ url: h.emulator.url, apiKey: UPSTREAM_KEY, connections: 4 });
    const restarted = await buildServer({
      config: h.config,
      upstream,
      store: h.gateway.store,
      clock: h.gateway.clock,
      logger: createLogger('silent'),
      webhookSecrets: SECRETS,
    });
    await restarted.listen({ host: '127.0.0.1', port });
    try {
      const got = await until(() => (rx.received.length > 0 ? rx.received : undefined), 6_000);
      const deliveries = (await h.emu('/webhooks')) as {
        deliveries: Array<{ state: string; attempts: Array<{ status: number | null }> }>;
      };
      expect(deliveries.deliveries[0]!.state).toBe('delivered');
      expect(deliveries.deliveries[0]!.attempts[0]!.status).toBeNull();
      expect(got).toHaveLength(1);
      const polls = await checkPolls(h);
      for (const app of ['alpha', 'beta']) {
        const res = await fetch(`${h.gateway.url}/v1/checks/${id}`, {
          headers: { authorization: `Bearer ${h.tokens[app]}` },
        });
        expect(res.status).toBe(200);
      }
      expect(await checkPolls(h)).toBe(polls);
      await new Promise((r) => setTimeout(r, 300));
      expect(rx.received).toHaveLength(1);
    } finally {
      await restarted.close();
      await upstream.close();
    }
  });
});
