// The upstream key never appears in a response or a log line; app tokens never reach a log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness, UPSTREAM_KEY } from '../helpers/gateway-harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ emulator: { checkSeconds: 0.05, checkWaitSeconds: 1 } });
});
afterAll(() => h.close());

describe('secrets stay secret', () => {
  it('never shows the upstream key or an app token in responses or logs', async () => {
    const seen: string[] = [];
    const record = async (res: Response) => {
      seen.push(JSON.stringify([...res.headers.entries()]), await res.text());
    };
    await record(await h.call('alpha', '/v1/me'));
    await record(await h.call('alpha', '/v1/companies/7707083893'));
    await record(await h.call('alpha', '/v1/companies/7707083894'));
    await record(await h.call('alpha', '/v1/suggest?q=abc'));
    await record(
      await h.call('alpha', '/v1/check', {
        method: 'POST',
        body: '{"inn":"7707083893","purpose":"requisites"}',
      }),
    );
    await record(await h.call('alpha', '/nope'));
    await record(
      await fetch(`${h.gateway.url}/v1/me`, { headers: { authorization: `Bearer ${UPSTREAM_KEY}` } }),
    );
    await record(
      await fetch(`${h.gateway.url}/admin/ledger`, { headers: { authorization: `Bearer ${h.adminToken}` } }),
    );
    await h.emu('/faults', { route: 'company', count: 1, status: 502 });
    await record(await h.call('beta', '/v1/companies/7736050003'));
    await new Promise((r) => setTimeout(r, 50));

    expect(h.logs.length).toBeGreaterThan(5);
    const everything = [...seen, ...h.logs].join('\n');
    expect(everything).not.toContain(UPSTREAM_KEY);
    for (const token of Object.values(h.tokens)) expect(h.logs.join('\n')).not.toContain(token);
    expect(h.logs.join('\n')).not.toContain(h.adminToken);
  });

  it('writes one log line per request with app, route, status, duration, cache and charged', async () => {
    const start = h.logs.length;
    await h.call('gamma', '/v1/banks/044525225');
    await new Promise((r) => setTimeout(r, 20));
    const lines = h.logs.slice(start).map((l) => JSON.parse(l) as Record<string, unknown>);
    const requestLines = lines.filter((l) => l.msg === 'request');
    expect(requestLines).toHaveLength(1);
    expect(requestLines[0]).toMatchObject({ app: 'gamma', route: 'bank', status: 200, charged: 0 });
    expect(typeof requestLines[0]!.durationMs).toBe('number');
  });
});
