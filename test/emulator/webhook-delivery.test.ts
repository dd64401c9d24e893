// check.completed delivery to a real local HTTP receiver: the envelope, the delivery
// headers, signatures verified per the spec with both rotation secrets, the same event id
// and delivery number on every attempt, the six-attempt schedule driven by the emulator
// clock, the handler timeout, and redirects that are not followed.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type Harness, knownInns, startHarness } from './emulator-harness.ts';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

let receiver: Server;
let receiverUrl: string;
let received: Received[] = [];
/** What the receiver answers next: a status, 'hang' (never answers in time) or 'redirect'. */
let script: Array<number | 'hang' | 'redirect'> = [];
const inns = knownInns(6, 1100);

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const step = script.shift() ?? 200;
      if (step === 'hang') return void setTimeout(() => res.writeHead(200).end(), 1500).unref();
      if (step === 'redirect') return void res.writeHead(302, { location: '/moved' }).end();
      res.writeHead(step).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
});
afterAll(async () => {
  receiver.closeAllConnections();
  await new Promise((resolve) => receiver.close(resolve));
});
afterEach(() => {
  received = [];
  script = [];
});

async function emulator(): Promise<Harness> {
  return startHarness({
    checkSeconds: 0.15,
    checkWaitSeconds: 0.05,
    webhookUrl: receiverUrl,
    webhookSecrets: ['whsec-old', 'whsec-new'],
    webhookTimeoutMs: 300,
  });
}

/** The spec's receiver rule: any v1 equals HMAC-SHA256(secret, t + "." + raw body), constant time. */
function verify(signature: string, body: string, secret: string, nowSeconds: number): boolean {
  const parts = signature.split(',').map((p) => p.split('=') as [string, string]);
  const t = Number(parts.find(([k]) => k === 't')?.[1]);
  if (!Number.isFinite(t) || Math.abs(nowSeconds - t) > 300) return false;
  const expected = Buffer.from(createHmac('sha256', secret).update(`${t}.${body}`).digest('hex'));
  return parts
    .filter(([k]) => k === 'v1')
    .some(([, v]) => v.length === expected.length && timingSafeEqual(Buffer.from(v), expected));
}

describe('webhook delivery', () => {
  it('delivers a signed check.completed with the dossier GET /v1/checks returns; retries keep id and delivery', async () => {
    const h = await emulator();
    try {
      script = [500, 500, 200];
      const inn = inns[0]!;
      const ticket = await h.post('/v1/check', { inn });
      expect(ticket.status).toBe(202);
      await eventually(async () => received.length >= 2);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(received).toHaveLength(2);
      await h.advance(55_000);
      expect(received).toHaveLength(2);
      await h.advance(5_000);
      await eventually(async () => received.length >= 3);

      const ids = new Set(received.map((r) => r.headers['x-service-event-id']));
      expect(ids.size).toBe(1);
      expect(received.map((r) => r.headers['x-service-delivery'])).toEqual(['1', '1', '1']);
      expect(received.map((r) => r.headers['x-service-attempt'])).toEqual(['1', '2', '3']);
      expect(new Set(received.map((r) => r.body)).size).toBe(1);
      const now = Math.floor((await h.control('GET', '/clock')).json.now_ms / 1000);
      for (const r of received) {
        expect(r.path).toBe('/hooks');
        expect(r.headers['x-service-event']).toBe('check.completed');
        const signature = String(r.headers['x-service-signature']);
        expect(signature).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
        expect(verify(signature, r.body, 'whsec-old', now)).toBe(true);
        expect(verify(signature, r.body, 'whsec-new', now)).toBe(true);
        expect(verify(signature, r.body, 'whsec-other', now)).toBe(false);
        expect(verify(signature, `${r.body} `, 'whsec-new', now)).toBe(false);
      }
      const event = JSON.parse(received[0]!.body);
      expect(event.id).toBe(received[0]!.headers['x-service-event-id']);
      expect(event).toMatchObject({
        event: 'check.completed',
        data: {
          check_id: ticket.json.check_id,
          inn,
          found: true,
          dossier_url: `${h.url}/v1/checks/${ticket.json.check_id}`,
        },
      });
      expect(event.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+03:00$/);
      const polled = await h.get(`/v1/checks/${ticket.json.check_id}`);
      expect(event.data.dossier).toEqual(polled.json);
      const deliveries = (await h.control('GET', '/webhooks')).json.deliveries;
      expect(deliveries).toMatchObject([{ state: 'delivered', delivery: 1 }]);
      expect(deliveries[0].attempts.map((a: { status: number }) => a.status)).toEqual([500, 500, 200]);
    } finally {
      await h.close();
    }
  });

  it('gives up after six attempts: at once, at once again, then 1, 5, 15 and 60 minutes', async () => {
    const h = await emulator();
    try {
      script = [500, 500, 500, 500, 500, 500, 500];
      expect((await h.post('/v1/check', { inn: inns[1] })).status).toBe(202);
      await eventually(async () => received.length >= 2);
      for (const [minutes, expected] of [
        [1, 3],
        [5, 4],
        [15, 5],
        [60, 6],
      ] as const) {
        await h.advance(minutes * 60_000 - 5000);
        await new Promise((resolve) => setTimeout(resolve, 60));
        expect(received).toHaveLength(expected - 1);
        await h.advance(5000);
        await eventually(async () => received.length >= expected);
      }
      await h.advance(24 * 3600_000);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(received).toHaveLength(6);
      expect(received.map((r) => r.headers['x-service-attempt'])).toEqual(['1', '2', '3', '4', '5', '6']);
      const [delivery] = (await h.control('GET', '/webhooks')).json.deliveries;
      expect(delivery.state).toBe('failed');
    } finally {
      await h.close();
    }
  });

  it('a handler slower than the timeout and a redirect count as failures; redirects are not followed', async () => {
    const h = await emulator();
    try {
      script = ['hang', 'redirect', 200];
      expect((await h.post('/v1/check', { inn: inns[2] })).status).toBe(202);
      await eventually(async () => received.length >= 2, 3000);
      await h.advance(60_000);
      await eventually(async () => received.length >= 3);
      expect(received.map((r) => r.path)).toEqual(['/hooks', '/hooks', '/hooks']);
      const [delivery] = (await h.control('GET', '/webhooks')).json.deliveries;
      expect(
        delivery.attempts.map((a: { status: number | null; error?: string }) => a.status ?? a.error),
      ).toEqual(['timeout', 302, 200]);
    } finally {
      await h.close();
    }
  });

  it('a requisites check event carries found and requisites; delivery numbers grow per address', async () => {
    const h = await emulator();
    try {
      expect((await h.post('/v1/check', { inn: inns[3] })).status).toBe(202);
      expect((await h.post('/v1/check', { inn: inns[4], purpose: 'requisites' })).status).toBe(202);
      await eventually(async () => received.length >= 2);
      const events = received.map((r) => JSON.parse(r.body));
      const requisites = events.find((e) => e.data.inn === inns[4]);
      expect(requisites.data).toMatchObject({ found: true, requisites: { inn: inns[4] } });
      expect(requisites.data.dossier).toBeUndefined();
      expect(received.map((r) => r.headers['x-service-delivery']).sort()).toEqual(['1', '2']);
    } finally {
      await h.close();
    }
  });
});
