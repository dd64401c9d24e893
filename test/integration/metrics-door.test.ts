// /metrics behind its own door (issue 31, README "Observability"): the metrics listener serves
// it; the main port only to the metrics or admin token (or with metrics.onMainPort), refusing
// everyone else in the envelope without rendering; a flood of scrapes shares one render per
// metrics.renderCacheMs; and `promtool check metrics` accepts the whole output of a real gateway,
// default Node metrics included (promtool from Debian's prometheus package; without it the last
// test is skipped loudly, unless REQUIRE_PROMETHEUS=1, where it fails).
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { newToken, tokenHash } from '../../src/auth/tokens.ts';
import { configSchema } from '../../src/config/schema.ts';
import { createLogger } from '../../src/logger.ts';
import { GatewayMetrics } from '../../src/metrics/gateway-metrics.ts';
import { buildServer, reloadGateway } from '../../src/server.ts';
import { UpstreamClient } from '../../src/upstream/upstream-client.ts';
import { type Harness, startHarness, UPSTREAM_KEY } from '../helpers/gateway-harness.ts';

const promtool = spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0;
if (!promtool) {
  const message = 'metrics-door: no `promtool` (apt-get install prometheus); promtool check SKIPPED';
  if (process.env.REQUIRE_PROMETHEUS === '1') throw new Error(`${message} but REQUIRE_PROMETHEUS=1`);
  console.warn(`\n*** ${message} ***\n`);
}

const metricsToken = newToken();
let h: Harness;
let listener: string;
const renders = vi.spyOn(GatewayMetrics.prototype, 'render');

beforeAll(async () => {
  // The production door (port 0 for the listener, so parallel test files never collide).
  h = await startHarness({
    config: {
      metrics: { port: 0, onMainPort: false, renderCacheMs: 1_000, tokenHash: tokenHash(metricsToken) },
    },
  });
  listener = `http://127.0.0.1:${h.gateway.server.metricsPort}`;
  expect((await h.call('alpha', '/v1/companies/7707083893')).status).toBe(200);
});
afterAll(() => h?.close());

describe('the defaults', () => {
  it('a metrics listener on 127.0.0.1:9464, closed on the main port, renders cached for 1 s', () => {
    const { metrics } = configSchema.parse({});
    expect(metrics).toMatchObject({
      port: 9464,
      host: '127.0.0.1',
      onMainPort: false,
      tokenHash: null,
      renderCacheMs: 1_000,
    });
  });
});

describe('the door', () => {
  it('the listener serves GET /metrics and nothing else', async () => {
    const res = await fetch(`${listener}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(await res.text()).toMatch(/^cpgw_requests_total\{/m);
    expect((await fetch(`${listener}/v1/companies/7707083893`)).status).toBe(404);
    expect((await fetch(`${listener}/metrics`, { method: 'POST' })).status).toBe(404);
  });

  it('the main port: 401 in the envelope without a token or with a wrong one (no render); 200 with the metrics or admin token', async () => {
    const before = renders.mock.calls.length;
    const attempts: Array<Record<string, string>> = [
      {},
      { authorization: `Bearer ${newToken()}` },
      { authorization: 'Basic x' },
    ];
    for (const headers of attempts) {
      const res = await fetch(`${h.gateway.url}/metrics`, { headers });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      const body = (await res.json()) as {
        error: { code: string; message: string };
        meta: { request_id: string };
      };
      expect(body.error.code).toBe('unauthorized');
      expect(body.error.message).toContain('metrics.tokenHash');
      expect(body.meta.request_id).toBe(res.headers.get('x-request-id'));
    }
    // An app's token is not a scrape token.
    expect((await h.call('alpha', '/metrics')).status).toBe(401);
    expect(renders.mock.calls.length).toBe(before);
    for (const token of [metricsToken, h.adminToken]) {
      const res = await fetch(`${h.gateway.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
      expect(await res.text()).toMatch(/^cpgw_requests_total\{/m);
    }
  });

  it('metrics.onMainPort: true opens the main port to anyone', async () => {
    const open = await startHarness({ config: { metrics: { port: null, onMainPort: true } } });
    try {
      expect((await fetch(`${open.gateway.url}/metrics`)).status).toBe(200);
      expect(open.gateway.server.metricsPort).toBeNull();
    } finally {
      await open.close();
    }
  });
});

describe('a metrics listener that cannot bind', () => {
  it('is logged and shown in /healthz; the gateway still serves apps', async () => {
    const taken = h.gateway.server.metricsPort!;
    const second = await startHarness({ config: { metrics: { port: taken, onMainPort: false } } });
    try {
      expect(second.gateway.server.metricsPort).toBeNull();
      expect((await second.call('alpha', '/v1/companies/7707083893')).status).toBe(200);
      const health = (await (await fetch(`${second.gateway.url}/healthz`)).json()) as Record<string, string>;
      expect(health.status).toBe('degraded');
      expect(health.metrics_listener).toMatch(/^unavailable: .*EADDRINUSE/);
      expect((await fetch(`${second.gateway.url}/readyz`)).status).toBe(200);
      const line = second.logs.find((l) => l.includes('metrics listener could not start'));
      expect(line).toBeDefined();
      expect(JSON.parse(line!)).toMatchObject({ level: 50, port: taken, host: '127.0.0.1' });
    } finally {
      await second.close();
    }
  });
});

describe('a reload', () => {
  it('applies a new metrics token and onMainPort at once (no restart named)', async () => {
    const rotated = newToken();
    let next = { ...h.config, metrics: { ...h.config.metrics, tokenHash: tokenHash(rotated) } };
    const upstream = new UpstreamClient({ url: h.emulator.url, apiKey: UPSTREAM_KEY, connections: 2 });
    const server = await buildServer({
      config: h.config,
      upstream,
      store: h.gateway.store,
      clock: h.gateway.clock,
      logger: createLogger('silent'),
      loadConfig: () => next,
    });
    await server.listen({ host: '127.0.0.1', port: 0 });
    try {
      const url = `http://127.0.0.1:${(server.server.address() as { port: number }).port}/metrics`;
      const as = (token: string) => fetch(url, { headers: { authorization: `Bearer ${token}` } });
      expect((await as(metricsToken)).status).toBe(200);
      expect((await as(rotated)).status).toBe(401);
      expect(reloadGateway(server).restartNeeded).toEqual([]);
      expect((await as(metricsToken)).status).toBe(401);
      expect((await as(rotated)).status).toBe(200);
      next = { ...next, metrics: { ...next.metrics, onMainPort: true } };
      expect(reloadGateway(server).restartNeeded).toEqual([]);
      expect((await fetch(url)).status).toBe(200);
      next = { ...next, metrics: { ...next.metrics, renderCacheMs: 5_000 } };
      expect(reloadGateway(server).restartNeeded).toEqual(['metrics.renderCacheMs']);
    } finally {
      server.server.closeAllConnections();
      await server.close();
      await upstream.close();
    }
  });
});

describe('cpgw token new --metrics', () => {
  it('prints a token once and the hash that metrics.tokenHash accepts', () => {
    const r = spawnSync('node', ['bin/cpgw.js', 'token', 'new', '--metrics'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const token = /^ {2}(cpgw_\S+)$/m.exec(r.stdout)![1]!;
    const hash = /CPGW_METRICS_TOKEN_HASH=(\S+)/.exec(r.stdout)![1]!;
    expect(hash).toBe(tokenHash(token));
    expect(configSchema.parse({ metrics: { tokenHash: hash } }).metrics.tokenHash).toBe(hash);
  });
});

describe('the render cache', () => {
  it('60 concurrent scrapes cost one render; the next interval renders again, with fresh counts', async () => {
    h.advance(1_001); // past any render earlier tests left in the cache
    const before = renders.mock.calls.length;
    const started = Date.now();
    const texts: string[] = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        fetch(
          i % 2 ? `${listener}/metrics` : `${h.gateway.url}/metrics`,
          i % 2 ? {} : { headers: { authorization: `Bearer ${metricsToken}` } },
        ).then((r) => r.text()),
      ),
    );
    const elapsed = Date.now() - started;
    // One render per started second of the burst at most (the clock is real time plus an offset);
    // on any machine that finishes 60 local requests within a second, exactly one.
    const rendered = renders.mock.calls.length - before;
    expect(rendered).toBeGreaterThanOrEqual(1);
    expect(rendered).toBeLessThanOrEqual(Math.floor(elapsed / 1_000) + 1);
    if (elapsed < 900) expect(new Set(texts).size).toBe(1);

    const count = (text: string) =>
      Number(/^cpgw_requests_total\{[^}]*app="beta"[^}]*\} (\d+)/m.exec(text)?.[1] ?? 0);
    const seen = count(texts.at(-1)!);
    expect((await h.call('beta', '/v1/companies/7707083893')).status).toBe(200);
    h.advance(1_001);
    const fresh = await (await fetch(`${listener}/metrics`)).text();
    expect(count(fresh)).toBe(seen + 1);
  });
});

describe.skipIf(!promtool)('promtool', () => {
  it('`promtool check metrics` exits 0 on the whole output, default Node metrics included', async () => {
    for (const app of ['alpha', 'beta', 'gamma']) await h.call(app, '/v1/companies/7707083893');
    await h.call('alpha', '/v1/companies/0000000000');
    h.advance(1_001);
    const text = await (await fetch(`${listener}/metrics`)).text();
    expect(text).toMatch(/^process_cpu_user_seconds_total /m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect({ status: check.status, out: check.stdout + check.stderr }).toEqual({ status: 0, out: '' });
  });
});
