// Issue 31 (addresses come from configuration, never from another app). With server.publicUrl
// unset, a check's ticket used to keep the creating request's Host: an app posting a check with
// `Host: evil.example:8443` made every app that joined the check receive, signed with its own
// secret, a dossier_url on that host. Now each app's URLs name the address that app itself used.
// A Host that is not a well-formed host[:port] (here one holding a `"`) is never echoed: the
// listen address is used and the body stays valid JSON. Real sockets; the Host header is set
// with node:http (fetch does not let a caller choose it).
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySignature } from '../../src/checks/webhook-signature.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';
import { startReceiver, until } from '../helpers/webhook-receiver.ts';

const SECRETS = { upstream: ['upstream-secret-a1'], apps: { mallory: 'mallory-secret', bob: 'bob-secret' } };

/** POST/GET through a raw socket with the Host header we choose. */
function rawCall(
  gatewayUrl: string,
  token: string,
  method: string,
  path: string,
  host: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  const url = new URL(gatewayUrl);
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        setHost: false,
        headers: {
          host,
          authorization: `Bearer ${token}`,
          ...(payload
            ? { 'content-type': 'application/json', 'content-length': String(payload.length) }
            : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

describe("an app's Host never reaches another app", () => {
  let h: Harness;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    rx = await startReceiver();
    h = await startHarness({
      emulator: { checkSeconds: 1, checkWaitSeconds: 0.05 },
      apps: [
        { name: 'mallory', webhook: { url: `${rx.url}/mallory` } },
        { name: 'bob', webhook: { url: `${rx.url}/bob` } },
      ],
      webhookSecrets: SECRETS,
    });
    await h.emu('/webhooks/target', { url: `${h.gateway.url}/webhooks/upstream`, secrets: SECRETS.upstream });
  });
  afterAll(async () => {
    await h.close();
    await rx.close();
  });

  it("a joiner's ticket and signed webhook name the joiner's address, not the creator's Host", async () => {
    const [inn] = knownInns(1, 731);
    const gwHost = new URL(h.gateway.url).host;
    const created = await rawCall(
      h.gateway.url,
      h.tokens.mallory!,
      'POST',
      '/v1/check',
      'evil.example:8443',
      {
        inn,
      },
    );
    expect(created.status).toBe(202);
    const ticket = JSON.parse(created.text) as { check_id: string; poll_url: string };
    // The creator gets the address it chose itself (only it can be fooled by its own Host).
    expect(ticket.poll_url).toBe(`http://evil.example:8443/v1/checks/${ticket.check_id}`);

    const joined = await rawCall(h.gateway.url, h.tokens.bob!, 'POST', '/v1/check', gwHost, { inn });
    expect(joined.status).toBe(202);
    expect(joined.text).not.toContain('evil.example');
    const bobTicket = JSON.parse(joined.text) as { check_id: string; poll_url: string };
    expect(bobTicket.check_id).toBe(ticket.check_id);
    expect(bobTicket.poll_url).toBe(`${h.gateway.url}/v1/checks/${ticket.check_id}`);

    const bob = await until(() => rx.received.find((r) => r.path === '/bob'), 10_000);
    const mallory = await until(() => rx.received.find((r) => r.path === '/mallory'), 10_000);
    // Each delivery is signed with its own app's secret ...
    const header = (r: typeof bob) => String(r.headers['x-service-signature']);
    expect(
      verifySignature({ header: header(bob), body: bob.body, secrets: [SECRETS.apps.bob], nowMs: Date.now() })
        .ok,
    ).toBe(true);
    // ... and bob's names the address bob used; the creator's Host appears nowhere in it.
    const bobEvent = JSON.parse(bob.body.toString('utf8')) as { data: { dossier_url: string } };
    expect(bob.body.toString('utf8')).not.toContain('evil.example');
    expect(bobEvent.data.dossier_url).toBe(`${h.gateway.url}/v1/checks/${ticket.check_id}`);
    const malloryEvent = JSON.parse(mallory.body.toString('utf8')) as { data: { dossier_url: string } };
    expect(malloryEvent.data.dossier_url).toBe(`http://evil.example:8443/v1/checks/${ticket.check_id}`);
  });

  it('a Host that is not host[:port] is never echoed and the 202 stays valid JSON', async () => {
    const [inn] = knownInns(1, 977);
    const created = await rawCall(h.gateway.url, h.tokens.bob!, 'POST', '/v1/check', 'a"b.example', { inn });
    expect(created.status).toBe(202);
    const ticket = JSON.parse(created.text) as { check_id: string; poll_url: string };
    expect(created.text).not.toContain('b.example');
    expect(ticket.poll_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1\/checks\//);
  });
});
