// Drop-in for checks (issue #18): the `check` rate class paces only calls that can start a cold
// check, with the production defaults (no test override of the class). Two concurrent cold
// checks both start at once, as the upstream lets them; once two cold checks are in the window,
// a replay of an answered key, a warm check and a request the upstream refuses at once never
// wait in the check queue, and a client with a short timeout (the spec's advised 30 s, scaled)
// never times out because of it. A third cold check is still held back locally: the emulator's
// request log shows 0 upstream 429s.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

/** A client that gives up after this long (the spec advises 30 s; the emulator's wait is 1 s here). */
const CLIENT_TIMEOUT_MS = 8_000;

const post = (h: Harness, app: string, body: unknown, headers: Record<string, string> = {}) =>
  h.call(app, '/v1/check', {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...headers },
    signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
  });

const upstream429s = async (h: Harness) =>
  ((await h.emu('/requests')) as { requests: Array<{ status: number }> }).requests.filter(
    (r) => r.status === 429,
  ).length;

describe('the check class paces only cold checks', () => {
  let h: Harness;
  let firstCheckId = '';
  beforeAll(async () => {
    h = await startHarness({
      // Production pacing for `check` (the harness turns pacing off for the other classes only).
      config: { limits: { key: { burst: 60 }, search: { burst: 20 }, suggest: { burst: 120 } } },
      emulator: { checkSeconds: 3, checkWaitSeconds: 1 },
    });
  });
  afterAll(() => h.close());

  it('two concurrent cold checks both start at once and answer in the upstream own time', async () => {
    const [a, b] = knownInns(2, 600);
    const started = performance.now();
    const [ra, rb] = await Promise.all([
      post(h, 'alpha', { inn: a }, { 'idempotency-key': 'k-600' }),
      post(h, 'beta', { inn: b }),
    ]);
    const tookMs = performance.now() - started;
    expect([ra.status, rb.status]).toEqual([202, 202]);
    firstCheckId = ((await ra.json()) as { check_id: string }).check_id;
    // The upstream answers both after its 1 s wait; pacing would hold the second for 30 s.
    expect(tookMs).toBeLessThan(CLIENT_TIMEOUT_MS);
    const checks = ((await h.emu('/requests?route=check')) as { requests: unknown[] }).requests;
    expect(checks).toHaveLength(2);
  });

  it('with two cold checks in the window a replay of an answered key answers at once', async () => {
    const [a] = knownInns(1, 600);
    const res = await post(h, 'alpha', { inn: a }, { 'idempotency-key': 'k-600', 'x-max-wait-ms': '0' });
    expect(res.status).toBe(202);
    expect(res.headers.get('x-charged-minor')).not.toBe(null);
  });

  it('a request the upstream refuses at once (key reused with another body) is not queued', async () => {
    const [, , other] = knownInns(3, 600);
    const res = await post(h, 'alpha', { inn: other }, { 'idempotency-key': 'k-600', 'x-max-wait-ms': '0' });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('idempotency_key_reused');
  });

  it('a warm check (the company checked moments ago) is not queued behind the cold ones', async () => {
    const [a] = knownInns(1, 600);
    h.advance(4_000); // the cold check of `a` is ready upstream: a new check of it is warm
    expect((await h.call('alpha', `/v1/checks/${firstCheckId}`)).status).toBe(200);
    const res = await post(h, 'gamma', { inn: a }, { 'x-max-wait-ms': '0' });
    expect(res.status).toBe(200);
  });

  it('a third cold check in the window is held back locally: 0 upstream 429s', async () => {
    const [, , , d] = knownInns(4, 600);
    const res = await post(h, 'gamma', { inn: d }, { 'x-max-wait-ms': '0' });
    expect(res.status).toBe(429);
    const body = (await res.json()) as { error: { code: string; details: { limit: string } } };
    expect(body.error.code).toBe('rate_limited');
    expect(body.error.details.limit).toBe('check');
    expect(res.headers.get('x-charged-minor')).toBe('0');
    expect(await upstream429s(h)).toBe(0);
  });

  it('without X-Max-Wait-Ms a queued cold check answers within the client timeout', async () => {
    const [, , , , e] = knownInns(5, 600);
    h.advance(50_000); // the window's first slots free in about 10 s of gateway time
    const res = await post(h, 'alpha', { inn: e }).catch((err: unknown) => err as Error);
    // Never a client-side timeout: either it started within the class's wait, or it was refused.
    expect(res).toBeInstanceOf(Response);
    expect([202, 429]).toContain((res as Response).status);
    expect(await upstream429s(h)).toBe(0);
  });
});
