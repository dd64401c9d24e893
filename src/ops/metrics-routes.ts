// GET /metrics (Prometheus text format) behind its own door (README "Observability"):
//   - the metrics listener (metrics.host:metrics.port, 127.0.0.1:9464 by default) serves it to
//     whoever reaches that address, and nothing else;
//   - the main port serves it only when metrics.onMainPort is true, or to a scraper presenting
//     the metrics token (metrics.tokenHash) or the admin token; anyone else gets a cheap 401 in
//     the upstream's envelope, so a flood of scrapes costs the apps' port nothing;
//   - a render is shared by every scrape within metrics.renderCacheMs (1 s by default) and by
//     every scrape that arrives while it runs, so a flood costs at most one render per interval;
//   - and the flood itself is paced, since even a cheap answer costs the event loop the apps
//     share (bench/metrics-flood.ts: 16 connections asking as fast as answered moved a normal
//     client's p50 from 0.4 to 3.5 ms with 401s, 1.6 ms with cached renders): a connection
//     that already has the current render waits for the next one (at most one answer per
//     connection and interval; a Prometheus scraping every 15 s never waits), and a refused
//     scrape is answered after REFUSED_SCRAPE_DELAY_MS (a scraper without the token is
//     misconfigured; it learns so a second later, and its loop costs one answer a second).
// Each render first brings the shared gauges up to date (bounded by metrics.sharedReadTimeoutMs).
// It carries app names and sums, never an INN, token or id. A metrics listener that cannot bind
// is logged and shown in /healthz; it never stops the gateway from serving apps.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { bearerToken, matchToken } from '../auth/tokens.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { ApiError, sendError } from '../errors.ts';
import type { GatewayMetrics } from '../metrics/gateway-metrics.ts';
import type { SharedGauges } from '../metrics/shared-gauges.ts';

export interface MetricsRouteOptions {
  metrics: GatewayMetrics;
  shared: SharedGauges;
  /** The configuration at start (listener, render cache). */
  config: GatewayConfig;
  /** The running configuration (a reload may change the tokens); called per request. */
  live: () => GatewayConfig;
  now: () => number;
  onListenError: (err: Error) => void;
}

interface Door {
  /** The listener's state for /healthz: "ok", "off" or the reason it is not listening. */
  state: string;
}
const doors = new WeakMap<FastifyInstance, Door>();

/** The metrics listener's line in /healthz (none when it is off). */
export function metricsListenerHealth(app: FastifyInstance): Record<string, string> {
  const door = doors.get(app);
  return !door || door.state === 'off' ? {} : { metrics_listener: door.state };
}

/** How long a scrape refused on the main port (no or a wrong token) waits for its 401. */
export const REFUSED_SCRAPE_DELAY_MS = 1_000;

interface Render {
  at: number;
  text: string;
}

/**
 * One render shared by every caller within `cacheMs` of it (by `now`), and by every caller
 * arriving while it runs.
 */
export function cachedRender(
  render: () => Promise<string>,
  cacheMs: number,
  now: () => number,
): () => Promise<Render> {
  let last: Render | null = null;
  let running: Promise<Render> | null = null;
  return () => {
    if (last && now() - last.at < cacheMs) return Promise.resolve(last);
    running ??= render()
      .then((text) => {
        last = { at: now(), text };
        return last;
      })
      .finally(() => {
        running = null;
      });
    return running;
  };
}

/**
 * The shared render, paced per connection: a connection that was already given the current
 * render waits until the next one is due (one answer per connection and `cacheMs`).
 */
export function pacedScrape(
  render: () => Promise<string>,
  cacheMs: number,
  now: () => number,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
): (connection: object) => Promise<string> {
  const shared = cachedRender(render, cacheMs, now);
  const given = new WeakMap<object, number>();
  return async (connection) => {
    let r = await shared();
    if (cacheMs > 0 && given.get(connection) === r.at) {
      await sleep(Math.max(0, r.at + cacheMs - now()));
      r = await shared();
    }
    given.set(connection, r.at);
    return r.text;
  };
}

export function registerMetricsRoutes(app: FastifyInstance, o: MetricsRouteOptions): void {
  const initial = o.config.metrics;
  const scrape = pacedScrape(
    async () => {
      await o.shared.refresh();
      return o.metrics.render();
    },
    initial.renderCacheMs,
    o.now,
  );
  const door: Door = { state: initial.port === null ? 'off' : 'starting' };
  doors.set(app, door);
  app.decorate('metricsPort', null);

  app.get('/metrics', async (request, reply) => {
    const config = o.live();
    if (!config.metrics.onMainPort) {
      const token = bearerToken(request.headers.authorization);
      const accepted = [config.metrics.tokenHash, config.admin.tokenHash, config.admin.previousTokenHash]
        .filter((h): h is string => h !== null)
        .map((h) => ({ tokenHash: h }));
      if (token === null || matchToken(token, accepted) === null) {
        const where =
          config.metrics.port === null
            ? ''
            : ` or scrape ${config.metrics.host}:${app.metricsPort ?? config.metrics.port}`;
        await new Promise((r) => setTimeout(r, REFUSED_SCRAPE_DELAY_MS));
        return sendError(
          reply,
          new ApiError(
            'unauthorized',
            {},
            `GET /metrics on this port needs the metrics token (metrics.tokenHash)${where}`,
            { headers: { 'www-authenticate': 'Bearer' } },
          ),
        );
      }
    }
    return reply.header('content-type', o.metrics.contentType).send(await scrape(request.raw.socket));
  });

  if (initial.port === null) return;
  let server: Server | null = null;
  app.addHook('onReady', async () => {
    const s = createServer((req, res) => {
      if ((req.method !== 'GET' && req.method !== 'HEAD') || (req.url ?? '').split('?')[0] !== '/metrics') {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('only GET /metrics here\n');
        return;
      }
      scrape(req.socket).then(
        (text) => res.writeHead(200, { 'content-type': o.metrics.contentType }).end(text),
        (err: unknown) =>
          res.writeHead(500, { 'content-type': 'text/plain' }).end(`${(err as Error).message}\n`),
      );
    });
    try {
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(initial.port!, initial.host, () => resolve());
      });
    } catch (err) {
      door.state = `unavailable: ${(err as Error).message}`;
      o.onListenError(err as Error);
      return;
    }
    server = s;
    door.state = 'ok';
    app.metricsPort = (s.address() as AddressInfo).port;
  });
  app.addHook('onClose', async () => {
    const s = server;
    server = null;
    if (s) {
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    }
  });
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The port the separate metrics listener got (null: none); tests ask for port 0. */
    metricsPort: number | null;
  }
}
