// Checks end to end through real sockets (issue #13): the emulator delivers its signed
// check.completed to the gateway's ingress; the gateway caches the result, marks the ticket
// ready for every app that asked, and re-signs the event for each subscribed app with that app's
// own secret. Polls then cost no upstream call. The emulator's request log is the truth.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../../src/checks/webhook-signature.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';
import { checkPolls, startReceiver, until } from '../helpers/webhook-receiver.ts';

const SECRETS = {
  upstream: ['upstream-secret-1'],
  apps: { alpha: 'alpha-secret', beta: 'beta-secret', gamma: 'gamma-secret' },
};

describe('check.completed through the gateway', () => {
  let h: Harness;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    rx = await startReceiver();
    h = await startHarness({
      emulator: { checkSeconds: 1.5, checkWaitSeconds: 0.05 },
      apps: [
        { name: 'alpha', webhook: { url: `${rx.url}/alpha` } },
        { name: 'beta', webhook: { url: `${rx.url}/beta` } },
        { name: 'gamma', webhook: { url: `${rx.url}/gamma` } },
        { name: 'delta' },
      ],
      webhookSecrets: SECRETS,
    });
    await h.emu('/webhooks/target', {
      url: `${h.gateway.url}/webhooks/upstream`,
      secrets: ['upstream-secret-1'],
    });
  });
  afterAll(async () => {
    await h.close();
    await rx.close();
  });

  it('delivers the re-signed event to each subscribed owner within 2 s; polls then cost nothing upstream', async () => {
    const [inn] = knownInns(1, 700);
    const created = await h.call('alpha', '/v1/check', { method: 'POST', body: JSON.stringify({ inn }) });
    expect(created.status).toBe(202);
    const ticket = (await created.json()) as { check_id: string; poll_url: string };
    // The ticket names the gateway, never the upstream.
    expect(ticket.poll_url).toBe(`${h.gateway.url}/v1/checks/${ticket.check_id}`);
    expect(ticket.poll_url).not.toContain(h.emulator.url);
    const joined = await h.call('beta', '/v1/check', { method: 'POST', body: JSON.stringify({ inn }) });
    expect(joined.status).toBe(202);
    const delta = await h.call('delta', '/v1/check', { method: 'POST', body: JSON.stringify({ inn }) });
    expect(delta.status).toBe(202);

    // An early poll (before Retry-After) is answered by the gateway.
    const pollsBefore = await checkPolls(h);
    const early = await h.call('alpha', `/v1/checks/${ticket.check_id}`);
    expect(early.status).toBe(202);
    expect(Number(early.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await early.json()) as { poll_url: string }).poll_url).toContain(h.gateway.url);
    expect(await checkPolls(h)).toBe(pollsBefore);

    const both = await until(() => (rx.received.length >= 2 ? rx.received : undefined), 6_000);
    const upstreamDeliveries = (await h.emu('/webhooks')) as {
      deliveries: Array<{ event_id: string; state: string; attempts: Array<{ at: string }> }>;
    };
    const upstream = upstreamDeliveries.deliveries.find((d) => d.state === 'delivered')!;
    const deliveredAt = Date.parse(upstream.attempts.at(-1)!.at);
    expect(new Set(both.map((r) => r.path))).toEqual(new Set(['/alpha', '/beta']));
    for (const r of both) {
      const app = r.path.slice(1) as 'alpha' | 'beta';
      expect(r.at - deliveredAt).toBeLessThan(2_000);
      const header = r.headers['x-service-signature'] as string;
      expect(
        verifySignature({ header, body: r.body, secrets: [SECRETS.apps[app]], nowMs: Date.now() }).ok,
      ).toBe(true);
      // Another app's secret does not verify it; neither does the upstream's.
      const other = app === 'alpha' ? SECRETS.apps.beta : SECRETS.apps.alpha;
      expect(
        verifySignature({ header, body: r.body, secrets: [other, ...SECRETS.upstream], nowMs: Date.now() })
          .ok,
      ).toBe(false);
      const event = JSON.parse(r.body.toString()) as {
        id: string;
        event: string;
        data: { check_id: string; dossier_url: string };
      };
      expect(event.id).toBe(upstream.event_id);
      expect(r.headers['x-service-event-id']).toBe(upstream.event_id);
      expect(event.event).toBe('check.completed');
      expect(event.data.dossier_url).toBe(`${h.gateway.url}/v1/checks/${ticket.check_id}`);
      expect(r.body.toString()).not.toContain(h.emulator.url);
    }

    // Every owning app's poll is answered from the gateway: 200, no upstream poll.
    const polls = await checkPolls(h);
    for (const app of ['alpha', 'beta', 'delta']) {
      const res = await h.call(app, `/v1/checks/${ticket.check_id.toUpperCase()}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-cache')).toBe('HIT');
      expect(((await res.json()) as { inn?: string; company?: { inn: string } }).company?.inn ?? inn).toBe(
        inn,
      );
    }
    expect(await checkPolls(h)).toBe(polls);
    expect((await h.call('gamma', `/v1/checks/${ticket.check_id}`)).status).toBe(404);
    // gamma subscribed but never asked: nothing delivered to it.
    await new Promise((r) => setTimeout(r, 300));
    expect(rx.received.filter((r) => r.path === '/gamma')).toHaveLength(0);
    expect(rx.received).toHaveLength(2);
    // The window opened from the moment the data was ready: a dossier read is free.
    const read = await h.call('delta', `/v1/companies/${inn}`);
    expect(read.status).toBe(200);
    expect(read.headers.get('x-charged-minor')).toBe('0');
  });

  it('/admin/webhooks shows the deliveries', async () => {
    const res = await fetch(`${h.gateway.url}/admin/webhooks`, {
      headers: { authorization: `Bearer ${h.adminToken}` },
    });
    const body = (await res.json()) as {
      deliveries: Array<{ app: string; state: string; attempts: unknown[] }>;
    };
    expect(body.deliveries.map((d) => [d.app, d.state]).sort()).toEqual([
      ['alpha', 'delivered'],
      ['beta', 'delivered'],
    ]);
    expect(body).toMatchObject({ count: 2, pending: 0, delivered: 2, failed: 0 });
    const admin = (path: string) =>
      fetch(`${h.gateway.url}${path}`, { headers: { authorization: `Bearer ${h.adminToken}` } });
    const one = (await (await admin('/admin/webhooks?state=delivered&limit=1')).json()) as typeof body;
    expect(one.deliveries).toHaveLength(1);
    expect(one).toMatchObject({ count: 1, delivered: 2 });
    for (const bad of ['limit=0', 'limit=1001', 'limit=ten', 'state=lost']) {
      const res = await admin(`/admin/webhooks?${bad}`);
      expect(res.status).toBe(422);
      type Envelope = { error: { code: string; details: { fields?: Array<{ field: string }> } } };
      const error = ((await res.json()) as Envelope).error;
      expect(error.code).toBe('validation_failed');
      expect(error.details.fields?.[0]?.field).toBe(bad.split('=')[0]);
    }
  });
});
