// Ops endpoints: /healthz (the process is alive) and /readyz (the store and the upstream are
// reachable). Readiness results are cached briefly so probes never hammer the upstream.
import type { FastifyInstance } from 'fastify';

export interface ReadinessProbes {
  store(): Promise<void>;
  upstream(): Promise<void>;
}

const READY_CACHE_MS = 2_000;

export function registerHealthRoutes(app: FastifyInstance, probes: ReadinessProbes, now: () => number): void {
  let cached: { at: number; status: number; body: Record<string, string> } | null = null;

  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    if (!cached || now() - cached.at > READY_CACHE_MS) {
      const [store, upstream] = await Promise.allSettled([probes.store(), probes.upstream()]);
      const body = {
        status: store.status === 'fulfilled' && upstream.status === 'fulfilled' ? 'ready' : 'not_ready',
        store: store.status === 'fulfilled' ? 'ok' : `unavailable: ${(store.reason as Error).message}`,
        upstream:
          upstream.status === 'fulfilled' ? 'ok' : `unavailable: ${(upstream.reason as Error).message}`,
      };
      cached = { at: now(), status: body.status === 'ready' ? 200 : 503, body };
    }
    return reply.code(cached.status).send(cached.body);
  });
}
