// An app added by a reload, with a webhook, gets its check's event: the completion of the
// upstream's webhook (and of the gateway's own poll) reads the configuration in force, not the
// one the replica started with (it used to fan out to the start-up apps only, so the new app's
// event was never queued). Real sockets; the emulator delivers its signed event to the ingress.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newToken, tokenHash } from '../../src/auth/tokens.ts';
import { verifySignature } from '../../src/checks/webhook-signature.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';
import { startReceiver, until } from '../helpers/webhook-receiver.ts';

const SECRETS = { upstream: ['upstream-secret-1'], apps: { alpha: 'alpha-secret', newbie: 'newbie-secret' } };

describe('a webhook app added by a reload', () => {
  let h: Harness;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  let added = false;
  const token = newToken();
  beforeAll(async () => {
    rx = await startReceiver();
    h = await startHarness({
      emulator: { checkSeconds: 1, checkWaitSeconds: 0.05 },
      apps: [{ name: 'alpha', webhook: { url: `${rx.url}/alpha` } }],
      webhookSecrets: SECRETS,
      loadConfig: (base) =>
        added
          ? {
              ...base,
              apps: [
                ...base.apps,
                {
                  ...base.apps[0]!,
                  name: 'newbie',
                  tokenHash: tokenHash(token),
                  webhook: { url: `${rx.url}/newbie` },
                },
              ],
            }
          : base,
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

  it('receives its check.completed, signed with its own secret', async () => {
    added = true;
    const reloaded = await fetch(`${h.gateway.url}/admin/reload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.adminToken}` },
    });
    expect(reloaded.status).toBe(200);
    const [inn] = knownInns(1, 730);
    const created = await fetch(`${h.gateway.url}/v1/check`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ inn }),
    });
    expect(created.status).toBe(202);
    const { check_id } = (await created.json()) as { check_id: string };
    const got = await until(() => rx.received.find((r) => r.path === '/newbie'), 8_000);
    const header = got.headers['x-service-signature'] as string;
    expect(
      verifySignature({ header, body: got.body, secrets: ['newbie-secret'], nowMs: Date.now() }).ok,
    ).toBe(true);
    expect((JSON.parse(got.body.toString()) as { data: { check_id: string } }).data.check_id).toBe(check_id);
  });
});
