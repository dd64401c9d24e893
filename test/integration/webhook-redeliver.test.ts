// An operator queues failed deliveries to an app's webhook again once the app's endpoint is
// fixed (POST /admin/webhooks/redeliver): the event arrives with the same event id and delivery
// id, the attempts before are kept, and the whole retry schedule applies again. Bad input is a
// 422 naming the field; without the admin token, 401. Real gateway, emulator and receiver.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';
import { startReceiver, until } from '../helpers/webhook-receiver.ts';

interface Overview {
  pending: number;
  delivered: number;
  failed: number;
  deliveries: Array<{ check_id: string; app: string; state: string; attempts: Array<{ status: number }> }>;
}

describe('POST /admin/webhooks/redeliver', () => {
  let h: Harness;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  const admin = (path: string, init: RequestInit = {}) =>
    fetch(`${h.gateway.url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${h.adminToken}`, 'content-type': 'application/json' },
    });
  beforeAll(async () => {
    // alpha's endpoint is down for three attempts (the first and both retries), then fixed.
    rx = await startReceiver({ '/alpha': [503, 503, 503] });
    h = await startHarness({
      emulator: { checkSeconds: 1, checkWaitSeconds: 0.05 },
      apps: [{ name: 'alpha', webhook: { url: `${rx.url}/alpha` } }, { name: 'beta' }],
      config: { webhooks: { workerIntervalMs: 50, retryDelaysMs: [0, 100] } },
      webhookSecrets: { upstream: [], apps: { alpha: 'alpha-secret' } },
    });
  });
  afterAll(async () => {
    await h.close();
    await rx.close();
  });

  it('queues the failed delivery again; it arrives with the same ids and its attempts are kept', async () => {
    const [inn] = knownInns(1, 780);
    const created = await h.call('alpha', '/v1/check', { method: 'POST', body: JSON.stringify({ inn }) });
    expect(created.status).toBe(202);
    const { check_id: id } = (await created.json()) as { check_id: string };
    const failed = await until(async () => {
      const o = (await (await admin('/admin/webhooks?state=failed')).json()) as Overview;
      return o.failed === 1 ? o : undefined;
    }, 8_000);
    expect(failed.deliveries[0]!.attempts.map((a) => a.status)).toEqual([503, 503, 503]);
    expect(rx.received).toHaveLength(3);

    expect(
      (await admin('/admin/webhooks/redeliver', { method: 'POST', body: '{"app":"beta"}' })).status,
    ).toBe(200);
    expect(rx.received).toHaveLength(3); // beta had nothing failed

    const res = await admin('/admin/webhooks/redeliver', {
      method: 'POST',
      body: JSON.stringify({ app: 'alpha' }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ redelivered: 1 });
    const arrived = await until(() => rx.received[3], 3_000);
    const first = rx.received[0]!;
    expect(arrived.headers['x-service-event-id']).toBe(first.headers['x-service-event-id']);
    expect(arrived.headers['x-service-delivery']).toBe(first.headers['x-service-delivery']);
    expect(arrived.headers['x-service-attempt']).toBe('4');
    expect(JSON.parse(arrived.body.toString()).data.check_id).toBe(id);

    const after = (await (await admin('/admin/webhooks')).json()) as Overview;
    expect([after.pending, after.delivered, after.failed]).toEqual([0, 1, 0]);
    expect(after.deliveries[0]!.attempts.map((a) => a.status)).toEqual([503, 503, 503, 200]);
    // Nothing failed is left: a second call queues nothing.
    const again = await admin('/admin/webhooks/redeliver', { method: 'POST', body: '{}' });
    expect(await again.json()).toEqual({ redelivered: 0 });
  });

  it('refuses bad input with 422 naming the field, and callers without the admin token', async () => {
    for (const [body, field] of [
      ['{"app":"nobody"}', 'app'],
      ['{"app":7}', 'app'],
      ['{"check_id":"../x"}', 'check_id'],
      // A camelCase filter is refused, never ignored (it would redeliver everything).
      ['{"checkId":"6f1c1f3e-2d4b-4c8e-9a7b-0e5d3c2b1a09"}', 'checkId'],
      ['[1]', 'body'],
      ['{"app":', 'body'],
    ] as const) {
      const res = await admin('/admin/webhooks/redeliver', { method: 'POST', body });
      expect(res.status, body).toBe(422);
      const error = (
        (await res.json()) as { error: { code: string; details: { fields: Array<{ field: string }> } } }
      ).error;
      expect(error.code).toBe('validation_failed');
      expect(error.details.fields[0]!.field).toBe(field);
    }
    const anonymous = await fetch(`${h.gateway.url}/admin/webhooks/redeliver`, { method: 'POST' });
    expect(anonymous.status).toBe(401);
  });
});
