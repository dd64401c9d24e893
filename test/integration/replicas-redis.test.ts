// Replicas that agree (issue 29 item 4), two gateways on one real Redis over real sockets: each
// writes a heartbeat, GET /admin/replicas on either lists both with the same config hash and
// version, and /metrics on each shows cpgw_config_info{hash} = 1 with that hash. After a reload
// with a changed config on A only (POST /admin/reload; the loader gives what an edited config
// file would), the listing shows two hashes (agree: false) and A's /metrics carries the new hash
// (the old series gone) while B's keeps the old one: what CpgwConfigDrift alerts on.
import { afterAll, describe, expect, it } from 'vitest';
import { GATEWAY_VERSION } from '../../src/ops/replica-heartbeat.ts';
import { type GatewayInstance, type ReplicaHarness, startRedisReplicas } from '../helpers/gateway-harness.ts';

let changed = false;
const r: ReplicaHarness | null = await startRedisReplicas({
  apps: [{ name: 'crm', budgets: { day: { limitMinor: 5000 } } }],
  adminTokens: [{ name: 'view', role: 'viewer' }],
  loadConfig: (base) =>
    changed
      ? { ...base, apps: base.apps.map((a) => ({ ...a, budgets: { day: { limitMinor: 7777 } } })) }
      : base,
});

interface Listing {
  answered_by: string;
  config_hash: string;
  count: number;
  agree: boolean;
  config_hashes: Record<string, number>;
  versions: Record<string, number>;
  replicas: Array<{
    id: string;
    host: string;
    version: string;
    config_hash: string;
    started_at: string;
    last_seen_at: string;
  }>;
}

describe.skipIf(!r)('replicas on one Redis: heartbeats, config hashes, drift after a reload', () => {
  const { h, second: b } = r!;
  const a = h.gateway;
  afterAll(() => r?.close());

  const replicas = async (g: GatewayInstance, token = h.adminTokens.view!) => {
    const res = await fetch(`${g.url}/admin/replicas`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    return (await res.json()) as Listing;
  };
  const configInfo = async (g: GatewayInstance) => {
    const text = await (await fetch(`${g.url}/metrics`)).text();
    return [...text.matchAll(/^cpgw_config_info\{hash="([0-9a-f]+)"\} (\S+)$/gm)].map((m) => ({
      hash: m[1]!,
      value: Number(m[2]),
    }));
  };

  /** The listing once `ok` holds (a heartbeat write races the answer that caused it; 2 s at most). */
  const replicasWhen = async (g: GatewayInstance, ok: (l: Listing) => boolean) => {
    const deadline = Date.now() + 2000;
    let l = await replicas(g);
    while (!ok(l) && Date.now() < deadline) {
      await new Promise((res) => setTimeout(res, 50));
      l = await replicas(g);
    }
    return l;
  };

  it('both replicas are listed, on either, with one config hash and version', async () => {
    const fromA = await replicas(a);
    const fromB = await replicas(b);
    expect(fromA.count).toBe(2);
    expect(fromA.agree).toBe(true);
    expect(Object.keys(fromA.config_hashes)).toEqual([fromA.config_hash]);
    expect(fromA.versions).toEqual({ [GATEWAY_VERSION]: 2 });
    expect(fromA.answered_by).not.toBe(fromB.answered_by);
    expect(fromA.replicas.map((x) => x.id).sort()).toEqual([fromA.answered_by, fromB.answered_by].sort());
    expect(fromB.replicas.map((x) => x.id).sort()).toEqual(fromA.replicas.map((x) => x.id).sort());
    for (const x of fromA.replicas) {
      expect(x.config_hash).toBe(fromA.config_hash);
      expect(Date.parse(x.last_seen_at)).toBeGreaterThanOrEqual(Date.parse(x.started_at));
    }
    // Only the hash of the config: no token hash or other secret in the answer.
    const raw = JSON.stringify(fromA);
    expect(raw).not.toMatch(/sha256:/);
    expect(raw).not.toContain(h.adminTokens.view!);

    expect(await configInfo(a)).toEqual([{ hash: fromA.config_hash, value: 1 }]);
    expect(await configInfo(b)).toEqual([{ hash: fromA.config_hash, value: 1 }]);
  });

  it('refuses without an admin token, in the envelope', async () => {
    const res = await fetch(`${a.url}/admin/replicas`);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBeTruthy();
  });

  it('a reload with a changed config on A: the hashes differ in /admin/replicas and in /metrics', async () => {
    const before = await replicas(a);
    const idA = before.answered_by;
    changed = true;
    const res = await fetch(`${a.url}/admin/reload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.adminToken}` },
    });
    expect(res.status).toBe(200);

    const fromB = await replicasWhen(b, (l) => !l.agree);
    expect(fromB.count).toBe(2);
    expect(fromB.agree).toBe(false);
    expect(Object.keys(fromB.config_hashes)).toHaveLength(2);
    const hashA = fromB.replicas.find((x) => x.id === idA)!.config_hash;
    const hashB = fromB.replicas.find((x) => x.id !== idA)!.config_hash;
    expect(hashB).toBe(before.config_hash);
    expect(hashA).not.toBe(before.config_hash);
    expect((await replicas(a)).config_hash).toBe(hashA);

    expect(await configInfo(a)).toEqual([{ hash: hashA, value: 1 }]);
    expect(await configInfo(b)).toEqual([{ hash: hashB, value: 1 }]);

    // The reload on B with the same changed config: they agree again.
    const resB = await fetch(`${b.url}/admin/reload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.adminToken}` },
    });
    expect(resB.status).toBe(200);
    const again = await replicasWhen(a, (l) => l.agree);
    expect(again.agree).toBe(true);
    expect(again.config_hashes).toEqual({ [hashA]: 2 });
    expect(await configInfo(b)).toEqual([{ hash: hashA, value: 1 }]);
  });
});
