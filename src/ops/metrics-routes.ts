// GET /metrics (Prometheus text format) on the main port, and optionally on a listener of its
// own (metrics.port) so scrapes can stay on an internal interface. Each scrape first brings the
// shared gauges up to date (bounded by metrics.sharedReadTimeoutMs), then renders the registry.
// Unauthenticated, like /healthz: it carries app names and sums, never an INN, token or id.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { GatewayMetrics } from '../metrics/gateway-metrics.ts';
import type { SharedGauges } from '../metrics/shared-gauges.ts';

export interface MetricsRouteOptions {
  metrics: GatewayMetrics;
  shared: SharedGauges;
  /** A separate listener for /metrics (null: main port only). */
  port: number | null;
  host: string;
}

export function registerMetricsRoutes(app: FastifyInstance, o: MetricsRouteOptions): void {
  const scrape = async (): Promise<string> => {
    await o.shared.refresh();
    return o.metrics.render();
  };
  app.decorate('metricsPort', null);
  app.get('/metrics', async (_request, reply) =>
    reply.header('content-type', o.metrics.contentType).send(await scrape()),
  );
  if (o.port === null) return;
  let server: Server | null = null;
  app.addHook('onReady', async () => {
    const s = createServer((req, res) => {
      if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('only GET /metrics here\n');
        return;
      }
      scrape().then(
        (text) => res.writeHead(200, { 'content-type': o.metrics.contentType }).end(text),
        (err: unknown) =>
          res.writeHead(500, { 'content-type': 'text/plain' }).end(`${(err as Error).message}\n`),
      );
    });
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(o.port!, o.host, () => resolve());
    });
    server = s;
    app.metricsPort = (s.address() as AddressInfo).port;
  });
  app.addHook('onClose', async () => {
    const s = server;
    server = null;
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  });
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The port the separate metrics listener got (null: none); tests ask for port 0. */
    metricsPort: number | null;
  }
}
