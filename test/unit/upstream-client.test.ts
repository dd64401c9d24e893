// The upstream client (src/upstream/upstream-client.ts) against a real HTTP server on port 0 that
// answers late or never: a call past its timeout fails as `timeout` and its connection is closed;
// a call whose client-gone signal (a Waker, as the pipeline gives it) wakes mid-call, or before
// it starts, fails as `aborted` (never sent when already aborted); an answered call leaves no
// listener on that signal, its own or undici's (a request's signal outlives the call: retries);
// one stopped while it waits for a connection is never sent; an answer read in many chunks comes
// back whole, a header sent twice joined.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Waker, type WakeSignal } from '../../src/clock.ts';
import { UpstreamClient, UpstreamFailure } from '../../src/upstream/upstream-client.ts';

let server: Server;
let client: UpstreamClient;
/** Requests the server received, and how many of their connections closed before an answer. */
const seen = { requests: 0, closedUnanswered: 0 };

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    seen.requests++;
    const query = new URL(req.url ?? '/', 'http://x').searchParams;
    const wait = Number(query.get('wait') ?? 0);
    const big = Number(query.get('big') ?? 0);
    if (big > 0) {
      // Many socket reads on the client's side, and a header sent twice.
      res.setHeader('x-twice', ['a', 'b']);
      const body = Buffer.alloc(big);
      for (let i = 0; i < big; i++) body[i] = i % 251;
      res.end(body);
      return;
    }
    const timer = setTimeout(() => res.end(JSON.stringify({ ok: true })), wait);
    res.on('close', () => {
      if (!res.writableFinished) {
        seen.closedUnanswered++;
        clearTimeout(timer);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  client = new UpstreamClient({ url: `http://127.0.0.1:${port}`, apiKey: 'k', connections: 2 });
});
afterAll(async () => {
  await client.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/** Waits until `check` holds (the server learns of a closed socket a moment after the client). */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(check()).toBe(true);
}

/** A WakeSignal that counts the listeners added and still attached. */
function countingSignal(): WakeSignal & { added: number; attached: number; wake(): void } {
  const waker = new Waker();
  const s = {
    added: 0,
    attached: 0,
    get aborted() {
      return waker.aborted;
    },
    addEventListener(type: 'abort', listener: () => void) {
      s.added++;
      s.attached++;
      waker.addEventListener(type, listener);
    },
    removeEventListener(type: 'abort', listener: () => void) {
      s.attached--;
      waker.removeEventListener(type, listener);
    },
    wake: () => waker.wake(),
  };
  return s;
}

describe('UpstreamClient', () => {
  it('answers a call in time, leaving no listener on the caller`s signal', async () => {
    const signal = countingSignal();
    const res = await client.request({ method: 'GET', path: '/v1/x?wait=0', timeoutMs: 2_000, signal });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.toString())).toEqual({ ok: true });
    expect(signal.added).toBeGreaterThan(0);
    expect(signal.attached).toBe(0);
  });

  it('fails a call past its timeout as `timeout` and closes its connection', async () => {
    const before = { ...seen };
    const started = performance.now();
    const failed = await client
      .request({ method: 'GET', path: '/v1/x?wait=5000', timeoutMs: 150 })
      .catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(UpstreamFailure);
    expect((failed as UpstreamFailure).kind).toBe('timeout');
    expect(performance.now() - started).toBeLessThan(4_000);
    await until(() => seen.closedUnanswered === before.closedUnanswered + 1);
  });

  it('fails a call whose client went away mid-call as `aborted` and closes its connection', async () => {
    const before = { ...seen };
    const signal = countingSignal();
    const call = client
      .request({ method: 'GET', path: '/v1/x?wait=5000', timeoutMs: 10_000, signal })
      .catch((e: unknown) => e);
    await until(() => seen.requests === before.requests + 1);
    signal.wake();
    const failed = await call;
    expect(failed).toBeInstanceOf(UpstreamFailure);
    expect((failed as UpstreamFailure).kind).toBe('aborted');
    await until(() => seen.closedUnanswered === before.closedUnanswered + 1);
    expect(signal.attached).toBe(0);
  });

  it('never sends a call whose client is already gone', async () => {
    const before = { ...seen };
    const gone = new Waker();
    gone.wake();
    const failed = await client
      .request({ method: 'GET', path: '/v1/x?wait=0', timeoutMs: 2_000, signal: gone })
      .catch((e: unknown) => e);
    expect((failed as UpstreamFailure).kind).toBe('aborted');
    await new Promise((r) => setTimeout(r, 100));
    expect(seen.requests).toBe(before.requests);
    // The pool is still good for the next call.
    const res = await client.request({ method: 'GET', path: '/v1/x?wait=0', timeoutMs: 2_000 });
    expect(res.status).toBe(200);
  });

  it('returns an answer read in many chunks whole, and joins a header sent twice', async () => {
    const res = await client.request({ method: 'GET', path: '/v1/x?big=300000', timeoutMs: 5_000 });
    expect(res.status).toBe(200);
    expect(res.body.length).toBe(300_000);
    for (const i of [0, 1, 65_535, 65_536, 131_071, 299_999]) expect(res.body[i]).toBe(i % 251);
    expect(res.headers['x-twice']).toBe('a, b');
  });

  it('never sends a call stopped while it waits for a connection; the call ahead is answered', async () => {
    const { port } = server.address() as AddressInfo;
    const one = new UpstreamClient({ url: `http://127.0.0.1:${port}`, apiKey: 'k', connections: 1 });
    try {
      const before = { ...seen };
      const ahead = one.request({ method: 'GET', path: '/v1/x?wait=300', timeoutMs: 5_000 });
      await until(() => seen.requests === before.requests + 1);
      const signal = countingSignal();
      const queued = one
        .request({ method: 'GET', path: '/v1/x?wait=0', timeoutMs: 5_000, signal })
        .catch((e: unknown) => e);
      signal.wake();
      expect(((await queued) as UpstreamFailure).kind).toBe('aborted');
      expect((await ahead).status).toBe(200);
      await new Promise((r) => setTimeout(r, 100));
      expect(seen.requests).toBe(before.requests + 1);
      expect(signal.attached).toBe(0);
    } finally {
      await one.close();
    }
  });
});
