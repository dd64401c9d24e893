// Transport failures become the gateway's upstream_unavailable: 502 when the upstream cannot
// be reached, 504 when it does not answer in time; upstream error answers pass through.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ config: { upstream: { timeoutMs: 300 } } });
});
afterAll(() => h.close());

describe('upstream failures', () => {
  it('an upstream that does not answer in time gives 504 upstream_unavailable', async () => {
    await h.emu('/faults', { route: 'bank', count: 5, latency_ms: 1500 });
    const res = await h.call('alpha', '/v1/banks/044525225');
    expect(res.status).toBe(504);
    const body = (await res.json()) as { error: { code: string }; meta: { request_id: string } };
    expect(body.error.code).toBe('upstream_unavailable');
    expect(body.meta.request_id).toBe(res.headers.get('x-request-id'));
    await h.emu('/reset', {});
  });

  it('upstream 502 source_unavailable passes through unchanged', async () => {
    await h.emu('/faults', { route: 'bank', count: 1, status: 502 });
    const res = await h.call('alpha', '/v1/banks/044525225');
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: { code: string } };
    expect(body.error.code).toBe('source_unavailable');
    expect(res.headers.get('x-upstream-request-id')).toBeTruthy();
  });

  it('an unreachable upstream gives 502 upstream_unavailable; /readyz stays ready, /healthz names it', async () => {
    const dead = await startHarness();
    await dead.emulator.close();
    try {
      const res = await dead.call('alpha', '/v1/banks/044525225');
      expect(res.status).toBe(502);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('upstream_unavailable');
      // Readiness never follows the vendor (README "Health probes"): the cache keeps serving.
      expect((await fetch(`${dead.gateway.url}/readyz`)).status).toBe(200);
      const health = await fetch(`${dead.gateway.url}/healthz`);
      expect(health.status).toBe(200);
      expect(((await health.json()) as { upstream: string }).upstream).toMatch(/unavailable/);
    } finally {
      await dead.gateway.close();
    }
  });
});

describe('health and shutdown', () => {
  it('/livez, /healthz and /readyz answer 200 when all is well', async () => {
    expect((await fetch(`${h.gateway.url}/livez`)).status).toBe(200);
    const health = await fetch(`${h.gateway.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok', draining: false, store: 'ok', upstream: 'ok' });
    const ready = await fetch(`${h.gateway.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready' });
  });

  it('closing the server finishes in-flight requests and then refuses new connections', async () => {
    const g = await startHarness({ config: { upstream: { timeoutMs: 5000 } } });
    try {
      await g.emu('/faults', { route: 'bank', count: 1, latency_ms: 400 });
      const inflight = g.call('alpha', '/v1/banks/044525225');
      await new Promise((r) => setTimeout(r, 100));
      const closing = g.gateway.server.close();
      const res = await inflight;
      expect(res.status).toBe(200);
      await closing;
      await expect(fetch(`${g.gateway.url}/healthz`)).rejects.toThrow();
    } finally {
      await g.emulator.close();
    }
  });
});
