// GET /admin/replicas (role right `read`): the live replicas on the shared store, from their
// heartbeats (ops/replica-heartbeat.ts): id, host, version, config hash, started, last seen; and
// whether they agree (one config hash and one version). The answer also names the replica
// that answered, so an operator behind a load balancer knows which one it asked.
//
// Must never: answer before the caller's right is checked, or show anything of the config but
// its hash.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type AdminRight, authorizeAdmin } from '../auth/admin-roles.ts';
import type { ReplicaHeartbeat } from '../ops/replica-heartbeat.ts';
import type { PipelineDeps } from '../pipeline/deps.ts';

export interface ReplicaRoutesOptions {
  current: () => PipelineDeps;
  heartbeat: Pick<ReplicaHeartbeat, 'id' | 'hash' | 'list'>;
}

export function registerReplicaRoutes(app: FastifyInstance, o: ReplicaRoutesOptions): void {
  const authorize = (request: FastifyRequest, right: AdminRight) =>
    authorizeAdmin(request, o.current().config.admin, right);

  app.get('/admin/replicas', async (request) => {
    authorize(request, 'read');
    const replicas = await o.heartbeat.list();
    const hashes: Record<string, number> = {};
    const versions: Record<string, number> = {};
    for (const r of replicas) {
      hashes[r.config_hash] = (hashes[r.config_hash] ?? 0) + 1;
      versions[r.version] = (versions[r.version] ?? 0) + 1;
    }
    return {
      answered_by: o.heartbeat.id,
      config_hash: o.heartbeat.hash,
      count: replicas.length,
      agree: Object.keys(hashes).length <= 1 && Object.keys(versions).length <= 1,
      config_hashes: hashes,
      versions,
      replicas,
    };
  });
}
