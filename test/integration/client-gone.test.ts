// A client that goes away through the real gateway (the pipeline's client-gone signal, a Waker
// since issue 33, src/pipeline/index.ts): a free read's upstream call is given up at once. The
// gateway has ONE upstream connection, so the next call gets it at once only if the first call's
// was let go (else it waits for the emulator's slow answer); a call that may charge is not given
// up (budget-exceeded.test.ts: it completes and is accounted).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ apps: [{ name: 'alpha' }], config: { upstream: { connections: 1 } } });
});
afterAll(() => h.close());

const noCache = { headers: { 'cache-control': 'no-cache' } };

describe('a client that goes away', () => {
  it('mid-call of a free read: the upstream call is given up, its connection free at once', async () => {
    const warm = await h.call('alpha', '/v1/banks/044525225', noCache);
    expect(warm.status).toBe(200);
    await warm.arrayBuffer();
    await h.emu('/faults', { route: 'bank', count: 1, latency_ms: 4_000 });
    const controller = new AbortController();
    const pending = h
      .call('alpha', '/v1/banks/044525225', { ...noCache, signal: controller.signal })
      .catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 300));
    controller.abort();
    expect(await pending).toBeInstanceOf(Error);
    const started = performance.now();
    const next = await h.call('alpha', '/v1/banks/044525225', noCache);
    expect(next.status).toBe(200);
    await next.arrayBuffer();
    // Well before the slow answer (4 s after it was asked for) would have freed the connection.
    expect(performance.now() - started).toBeLessThan(2_500);
  });
});
