// The gateway's listener under hostile or broken clients: slow senders are cut off by the
// request timeout, and Node's and fastify's own low-level refusals (bad request line, headers
// too large, malformed path, request timeout) come back in the upstream's error envelope with
// an X-Request-Id, never as bare text, never reaching the upstream.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

/** Writes raw bytes, optionally more later, and returns everything the server sent back. */
function rawExchange(
  url: string,
  first: string,
  options: { thenAfterMs?: number; then?: string; waitMs?: number } = {},
): Promise<{ text: string; closedAfterMs: number }> {
  const { port } = new URL(url);
  const started = Date.now();
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    let text = '';
    const done = () => resolve({ text, closedAfterMs: Date.now() - started });
    socket.on('data', (d) => {
      text += d.toString('utf8');
    });
    socket.on('close', done);
    socket.on('error', () => {});
    socket.write(first);
    if (options.then !== undefined)
      setTimeout(() => socket.writable && socket.write(options.then!), options.thenAfterMs ?? 0);
    setTimeout(() => socket.destroy(), options.waitMs ?? 10_000);
  });
}

interface Envelope {
  error: { code: string; message: string };
  meta: { request_id: string };
}

function envelopeOf(text: string): { status: number; requestId: string | null; body: Envelope } {
  const [head, body] = text.split('\r\n\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head ?? '')?.[1]);
  const requestId = /\r\nx-request-id: ([^\r]+)/i.exec(head ?? '')?.[1] ?? null;
  return { status, requestId, body: JSON.parse(body ?? 'null') };
}

describe('server hardening', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ config: { server: { requestTimeoutMs: 1_500, headersTimeoutMs: 1_000 } } });
  });
  afterAll(async () => h?.close());

  it('a malformed path is 400 validation_failed in the envelope with X-Request-Id', async () => {
    const upstreamBefore = await h.upstreamCount();
    const { text } = await rawExchange(
      h.gateway.url,
      'GET /v1/banks/%FF HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    );
    const e = envelopeOf(text);
    expect(e.status).toBe(400);
    expect(e.body.error.code).toBe('validation_failed');
    expect(e.requestId).toBeTruthy();
    expect(e.body.meta.request_id).toBe(e.requestId);
    expect(await h.upstreamCount()).toBe(upstreamBefore);
  });

  it('headers too large are 431 in the envelope with X-Request-Id', async () => {
    const { text } = await rawExchange(
      h.gateway.url,
      `GET /v1/me HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    const e = envelopeOf(text);
    expect(e.status).toBe(431);
    expect(e.body.error.code).toBe('validation_failed');
    expect(e.body.meta.request_id).toBe(e.requestId);
  });

  it('a request without Host and a CONNECT are refused in the envelope with X-Request-Id, never sent upstream', async () => {
    const upstreamBefore = await h.upstreamCount();
    const noHost = envelopeOf(
      (await rawExchange(h.gateway.url, 'GET /v1/companies/7707083893 HTTP/1.1\r\nConnection: close\r\n\r\n'))
        .text,
    );
    expect(noHost.status).toBe(400);
    expect(noHost.body.error.code).toBe('validation_failed');
    expect(noHost.body.meta.request_id).toBe(noHost.requestId);
    const tunnel = envelopeOf(
      (await rawExchange(h.gateway.url, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'))
        .text,
    );
    expect(tunnel.status).toBe(405);
    expect(tunnel.body.error.code).toBe('validation_failed');
    expect(tunnel.requestId).toBeTruthy();
    expect(await h.upstreamCount()).toBe(upstreamBefore);
  });

  it('an unparsable request line is 400 in the envelope', async () => {
    const { text } = await rawExchange(h.gateway.url, 'BLAH\r\n\r\n');
    const e = envelopeOf(text);
    expect(e.status).toBe(400);
    expect(e.body.error.code).toBe('validation_failed');
    expect(e.requestId).toBeTruthy();
  });

  it('a body that never finishes arriving is cut off by the request timeout (408 envelope), never sent upstream', async () => {
    const upstreamBefore = await h.upstreamCount();
    const token = h.tokens.alpha!;
    const { text, closedAfterMs } = await rawExchange(
      h.gateway.url,
      `POST /v1/check HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"inn"`,
      { waitMs: 15_000 },
    );
    expect(closedAfterMs).toBeLessThan(10_000);
    const e = envelopeOf(text);
    expect(e.status).toBe(408);
    expect(e.body.error.code).toBe('validation_failed');
    expect(e.body.meta.request_id).toBe(e.requestId);
    expect(await h.upstreamCount()).toBe(upstreamBefore);
  });

  it('headers that trickle in are cut off by the headers timeout', async () => {
    const { closedAfterMs } = await rawExchange(h.gateway.url, 'GET /v1/me HTTP/1.1\r\nHost: x\r\n', {
      waitMs: 15_000,
    });
    expect(closedAfterMs).toBeLessThan(10_000);
  });
});
