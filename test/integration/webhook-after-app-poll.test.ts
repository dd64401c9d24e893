// A check an app's own poll finds finished still reaches every subscribed app that asked for it.
// The upstream's event is lost here (webhook secrets set, so the gateway waits
// webhooks.pollGraceMs before polling itself, but the emulator sends to no address), and an app
// polls after Retry-After: that poll is the first the gateway hears of the result. It used to
// open the window and mark the ticket ready without queueing any delivery; a ready ticket is no
// longer polled and no event was coming, so the subscribed apps never heard of the check (this
// test then timed out waiting for the first delivery). Real sockets; the emulator's request log
// is the truth of what was polled upstream.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../../src/checks/webhook-signature.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';
import { checkPolls, startReceiver, until } from '../helpers/webhook-receiver.ts';

const SECRETS = { upstream: ['upstream-secret-1'], apps: { alpha: 'alpha-secret', beta: 'beta-secret' } };

describe("a check finished by an app's poll, its upstream event lost", () => {
  let h: Harness;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    rx = await startReceiver();
    h = await startHarness({
      emulator: { checkSeconds: 1, checkWaitSeconds: 0.05 },
      apps: [
        { name: 'alpha', webhook: { url: `${rx.url}/alpha` } },
        { name: 'beta', webhook: { url: `${rx.url}/beta` } },
        { name: 'gamma', webhook: { url: `${rx.url}/gamma` } },
      ],
      config: { webhooks: { workerIntervalMs: 50 } },
      webhookSecrets: SECRETS,
    });
  });
  afterAll(async () => {
    await h.close();
    await rx.close();
  });

  it('delivers the event to each subscribed app that asked; their polls then cost nothing upstream', async () => {
    const [inn] = knownInns(1, 780);
    const created = await h.call('alpha', '/v1/check', { method: 'POST', body: JSON.stringify({ inn }) });
    expect(created.status).toBe(202);
    const { check_id: id } = (await created.json()) as { check_id: string };
    const joined = await h.call('beta', '/v1/check', { method: 'POST', body: JSON.stringify({ inn }) });
    expect(((await joined.json()) as { check_id: string }).check_id).toBe(id);

    h.advance(3_000); // ready upstream, past Retry-After; well inside the gateway's poll grace
    const polled = await h.call('beta', `/v1/checks/${id}`);
    expect(polled.status).toBe(200);
    expect(await checkPolls(h)).toBe(1);

    const both = await until(() => (rx.received.length >= 2 ? rx.received : undefined), 5_000);
    expect(new Set(both.map((r) => r.path))).toEqual(new Set(['/alpha', '/beta']));
    for (const r of both) {
      const app = r.path.slice(1) as 'alpha' | 'beta';
      const header = r.headers['x-service-signature'] as string;
      expect(
        verifySignature({ header, body: r.body, secrets: [SECRETS.apps[app]], nowMs: Date.now() }).ok,
      ).toBe(true);
      const event = JSON.parse(r.body.toString()) as {
        event: string;
        data: { check_id: string; inn: string; found: boolean; dossier_url: string };
      };
      expect(event.event).toBe('check.completed');
      expect(event.data).toMatchObject({ check_id: id, inn, found: true });
      expect(event.data.dossier_url).toBe(`${h.gateway.url}/v1/checks/${id}`);
      expect(r.body.toString()).not.toContain(h.emulator.url);
    }

    // The other owner's poll is a cache hit; the gateway never polled the check itself.
    const again = await h.call('alpha', `/v1/checks/${id}`);
    expect(again.status).toBe(200);
    expect(again.headers.get('x-cache')).toBe('HIT');
    expect(await checkPolls(h)).toBe(1);
    // gamma subscribed but never asked: nothing for it; one event per app.
    await new Promise((r) => setTimeout(r, 300));
    expect(rx.received.map((r) => r.path).sort()).toEqual(['/alpha', '/beta']);
    // The window opened from the moment the data was ready: a dossier read is free.
    const read = await h.call('gamma', `/v1/companies/${inn}`);
    expect(read.status).toBe(200);
    expect(read.headers.get('x-charged-minor')).toBe('0');
  });
});
