// A check the upstream collects for longer than 15 minutes is still followed: without an upstream
// webhook the gateway polls it after its Retry-After and delivers the event to the app's webhook.
// The company's pending entry used to lapse 15 minutes after creation whatever Retry-After said,
// so the gateway never polled such a check and the app never heard of it (this test then timed
// out waiting for the delivery). Emulator and gateway clocks moved by the harness; real sockets.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';
import { checkPolls, startReceiver, until } from '../helpers/webhook-receiver.ts';

const COLLECT_S = 20 * 60;

describe('a check collected for 20 minutes', () => {
  let h: Harness;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    rx = await startReceiver();
    h = await startHarness({
      emulator: { checkSeconds: COLLECT_S, checkWaitSeconds: 0.05 },
      apps: [{ name: 'alpha', webhook: { url: `${rx.url}/alpha` } }, { name: 'beta' }],
      config: { webhooks: { workerIntervalMs: 50 } },
      webhookSecrets: { upstream: [], apps: { alpha: 'alpha-secret' } },
    });
  });
  afterAll(async () => {
    await h.close();
    await rx.close();
  });

  it('is polled after its Retry-After, offered to another app meanwhile, and its event delivered', async () => {
    const [inn] = knownInns(1, 760);
    const created = await h.call('alpha', '/v1/check', { method: 'POST', body: JSON.stringify({ inn }) });
    expect(created.status).toBe(202);
    expect(Number(created.headers.get('retry-after'))).toBeGreaterThan(15 * 60);
    const { check_id: id } = (await created.json()) as { check_id: string };

    h.advance(16 * 60_000);
    await new Promise((r) => setTimeout(r, 200)); // a few poller rounds: nothing due yet
    expect(await checkPolls(h)).toBe(0);
    // Past 15 minutes another app asking for the same check still joins it (no second charge).
    const ledger = (await h.ledger()).totals.count;
    const joined = await h.call('beta', '/v1/check', { method: 'POST', body: JSON.stringify({ inn }) });
    expect(joined.status).toBe(202);
    expect(((await joined.json()) as { check_id: string }).check_id).toBe(id);
    expect((await h.ledger()).totals.count).toBe(ledger);

    h.advance((COLLECT_S - 16 * 60 + 1) * 1000);
    const event = await until(() => rx.received.find((r) => r.path === '/alpha'), 5_000);
    expect(JSON.parse(event.body.toString()).data.check_id).toBe(id);
    expect(await checkPolls(h)).toBe(1);
    // beta polls its ticket: the gateway's poll finished it, so no upstream call.
    const polled = await h.call('beta', `/v1/checks/${id}`);
    expect(polled.status).toBe(200);
    expect(await checkPolls(h)).toBe(1);
  });
});
