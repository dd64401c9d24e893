// Issue 31 item 2 with a real Redis Cluster: three masters, one replica each (cluster-node-timeout
// 1 s), two gateway replicas on it, steady paid reads (every one a new company: a charge) and
// cached re-reads from a few clients, each request with a 15 s deadline. The master serving the
// `{money}` slot is SIGKILLed (no hand-over: the cluster notices, marks it failed and elects its
// replica); once the replica serves the slot, the `{limits}` slot's master is killed the same
// way. No client sees an error (every answer 200), and the gateway's ledger equals the
// emulator's (no charge lost, none doubled).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import {
  compareLedgers,
  errorsBy,
  type Failover,
  type FailoverGateways,
  inFailover,
  isClientError,
  killMasters,
  latencies,
  startFailoverGateways,
  startLoad,
  warm,
} from '../helpers/failover-load.ts';
import type { GatewayInstance, Harness } from '../helpers/gateway-harness.ts';
import { startTestCluster, type TestCluster } from '../helpers/redis-cluster.ts';

const cluster: TestCluster | null = await startTestCluster({ replicas: true });
let h: Harness;
let second: GatewayInstance;
let gateways: FailoverGateways | undefined;
/** The gateway's deadline for a read: upstream.timeoutMs + X-Max-Wait-Ms = 15 s; the client's too. */
const DEADLINE_MS = 15_000;
const UPSTREAM_TIMEOUT_MS = 5_000;

beforeAll(async () => {
  if (!cluster) return;
  // The upstream's key limit raised so the rate is the clients' own, not 60 a minute.
  gateways = await startFailoverGateways(cluster, {
    keyLimit: 100_000,
    walletMinor: 1_000_000_000,
    upstreamTimeoutMs: UPSTREAM_TIMEOUT_MS,
  });
  ({ h, second } = gateways);
});
afterAll(async () => {
  if (!cluster) return;
  await gateways?.close();
  await cluster.stop();
}, 60_000);

const maybe = cluster ? describe : describe.skip;

maybe('a Redis Cluster master failover under steady paid and cached traffic', () => {
  it('is waited out: no client error, the gateway ledger equals the emulator ledger', async () => {
    const urls = [h.gateway.url, second.url];
    const cachedInns = knownInns(12, 9100);
    const newInns = knownInns(3000, 9200);
    await warm(h.gateway.url, h.tokens.reading!, cachedInns);
    const load = startLoad({
      urls,
      paidToken: h.tokens.paying!,
      cachedToken: h.tokens.reading!,
      paid: 4,
      cached: 2,
      newInns,
      cachedInns,
      deadlineMs: DEADLINE_MS,
      headers: { 'x-max-wait-ms': String(DEADLINE_MS - UPSTREAM_TIMEOUT_MS) },
      pauseMs: 20,
    });
    const t0 = performance.now();
    let failovers: Failover[] = [];
    try {
      await new Promise((r) => setTimeout(r, 1_000));
      failovers = await killMasters(cluster!, gateways!.prefix, ['{money}:ledger', '{limits}:w:key'], 1_500);
    } finally {
      await load.stop();
    }
    const samples = load.samples;
    const during = samples.filter(inFailover(failovers));
    const report = {
      requests: samples.length,
      paid: samples.filter((s) => s.kind === 'paid').length,
      errors: errorsBy(samples),
      failovers: failovers.map((f) => ({
        slot: f.slot,
        from: f.from,
        to: f.to,
        ms: Math.round(f.promotedAt - f.killedAt),
      })),
      during: latencies(during),
      all: latencies(samples),
      runMs: Math.round(performance.now() - t0),
    };
    console.log(JSON.stringify(report));
    expect(samples.filter(isClientError), JSON.stringify(report.errors)).toEqual([]);
    // Each failover happened under load: paid reads were in flight while its slot had no master.
    expect(failovers).toHaveLength(2);
    for (const f of failovers) {
      const paid = samples.filter((s) => s.kind === 'paid' && inFailover([f])(s));
      expect(paid.length, `paid reads in flight through ${f.slot}'s failover`).toBeGreaterThan(0);
    }

    const ledgers = await compareLedgers(h, urls, newInns, samples);
    console.log(JSON.stringify(ledgers));
    expect(ledgers.pending).toBe(0);
    expect(ledgers.outbox).toBe(0);
    expect(ledgers.doubled).toEqual([]);
    expect(ledgers.missing).toEqual([]);
    expect(ledgers.extra).toEqual([]);
    expect(ledgers.gatewayMinor).toBe(ledgers.upstreamMinor);
    expect(ledgers.toldMinor).toBe(ledgers.upstreamMinor);
  }, 60_000);
});
