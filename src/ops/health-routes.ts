// Ops endpoints with the meanings orchestrators assume (README "Health probes"):
//   /livez   the process is alive and its event loop turns (an answer at all proves it);
//   /readyz  this replica can take apps' requests: it listens, its config is loaded, it is not
//            draining. 503 from the first moment of a drain (SIGTERM), 200 otherwise;
//   /healthz details for people and dashboards: the store's and the upstream's reachability,
//            always 200 (status "ok" or "degraded").
// Readiness must never follow the vendor or the store: a replica keeps serving cached reads
// through their outages, and a probe that failed with them would take every pod out of service
// exactly when the cache should carry the load. The details are cached briefly so probes never
// hammer the upstream; /livez and /readyz never wait on anything.
import type { FastifyInstance } from 'fastify';

export interface HealthDetailsProbes {
  store(): Promise<void>;
  upstream(): Promise<void>;
}

export interface HealthRouteOptions {
  probes: HealthDetailsProbes;
  now: () => number;
  /** True from the first moment of a drain (SIGTERM, close()). */
  draining: () => boolean;
  /** More named details for /healthz (e.g. the metrics listener); "ok" or a problem. */
  extra?: () => Record<string, string>;
}

const DETAILS_CACHE_MS = 2_000;

export function registerHealthRoutes(app: FastifyInstance, o: HealthRouteOptions): void {
  let cached: { at: number; details: Record<string, string> } | null = null;
  let probing: Promise<Record<string, string>> | null = null;

  const details = async (): Promise<Record<string, string>> => {
    if (cached && o.now() - cached.at <= DETAILS_CACHE_MS) return cached.details;
    probing ??= (async () => {
      const [store, upstream] = await Promise.allSettled([o.probes.store(), o.probes.upstream()]);
      const result = {
        store: store.status === 'fulfilled' ? 'ok' : `unavailable: ${(store.reason as Error).message}`,
        upstream:
          upstream.status === 'fulfilled' ? 'ok' : `unavailable: ${(upstream.reason as Error).message}`,
      };
      cached = { at: o.now(), details: result };
      return result;
    })().finally(() => {
      probing = null;
    });
    return probing;
  };

  app.get('/livez', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) =>
    o.draining()
      ? reply.code(503).header('connection', 'close').send({ status: 'draining' })
      : reply.send({ status: 'ready' }),
  );

  app.get('/healthz', async () => {
    const all = { ...(await details()), ...o.extra?.() };
    const degraded = Object.values(all).some((v) => v !== 'ok');
    return { status: degraded ? 'degraded' : 'ok', draining: o.draining(), ...all };
  });
}
