// A Redis Cluster master failover under load (issue 31 item 2), the larger sibling of
// test/integration/redis-cluster-failover.test.ts: a private cluster (3 masters, 1 replica each,
// cluster-node-timeout 1 s), two gateway replicas on it in this process in front of the emulator
// (its key limit raised so the clients set the rate; a dossier in 10-40 ms), 16 clients reading
// new companies (every read a charge) and 8 re-reading 24 warmed ones, every request with a 15 s
// deadline (upstream.timeoutMs 5 s + X-Max-Wait-Ms 10 s; the client gives up at 15 s too). After
// 2 s of steady traffic the master of the `{money}` slot is SIGKILLed; 2 s after its replica
// serves the slot, the master of the `{limits}` slot; 2 s more, then the ledgers are compared.
//
// Two cases, each on a fresh cluster: `before` (store.failoverWaitMs 0: a store fault on a paid
// call answered 503 at once, as before the retry) and `after` (the default, 10 s).
//
// Printed and written to bench/results/redis-cluster-failover.json per case and round: requests
// (paid, cached), client errors by status and code, each failover's duration (kill to the
// replica serving the slot on every node), p50/p99/max latency of the requests in flight during
// a failover (and of all), and the gateway's ledger against the emulator's.
//
// Run: node bin/run-ts.js bench/redis-cluster-failover.ts [--rounds=N] [--only=before|after]
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { knownInns } from '../test/emulator/emulator-harness.ts';
import {
  compareLedgers,
  errorsBy,
  type Failover,
  inFailover,
  isClientError,
  killMasters,
  latencies,
  type Sample,
  startFailoverGateways,
  startLoad,
  warm,
} from '../test/helpers/failover-load.ts';
import { startTestCluster } from '../test/helpers/redis-cluster.ts';

const PAID = 16;
const CACHED = 8;
const DEADLINE_MS = 15_000;
const UPSTREAM_TIMEOUT_MS = 5_000;
const STEADY_MS = 2_000;
const SLOTS = ['{money}:ledger', '{limits}:w:key'];

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const rounds = Number(arg('rounds') ?? 1);
const only = arg('only');
const CASES = [
  { name: 'before', failoverWaitMs: 0 },
  { name: 'after', failoverWaitMs: 10_000 },
].filter((c) => !only || c.name === only);

async function run(name: string, failoverWaitMs: number, innsFrom: number) {
  const cluster = await startTestCluster({ replicas: true });
  if (!cluster) throw new Error('redis-server and redis-cli are needed');
  const gateways = await startFailoverGateways(cluster, {
    keyLimit: 1_000_000,
    walletMinor: 10_000_000_000,
    upstreamTimeoutMs: UPSTREAM_TIMEOUT_MS,
    store: { failoverWaitMs },
  });
  const { h, second, prefix } = gateways;
  try {
    const urls = [h.gateway.url, second.url];
    const cachedInns = knownInns(24, innsFrom);
    const newInns = knownInns(20_000, innsFrom + 1_000);
    await warm(h.gateway.url, h.tokens.reading!, cachedInns);
    const load = startLoad({
      urls,
      paidToken: h.tokens.paying!,
      cachedToken: h.tokens.reading!,
      paid: PAID,
      cached: CACHED,
      newInns,
      cachedInns,
      deadlineMs: DEADLINE_MS,
      headers: { 'x-max-wait-ms': String(DEADLINE_MS - UPSTREAM_TIMEOUT_MS) },
      pauseMs: 10,
    });
    const t0 = performance.now();
    let failovers: Failover[] = [];
    try {
      await new Promise((r) => setTimeout(r, STEADY_MS));
      failovers = await killMasters(cluster, prefix, SLOTS, STEADY_MS);
    } finally {
      await load.stop();
    }
    const runMs = performance.now() - t0;
    const samples = load.samples;
    const during = samples.filter(inFailover(failovers));
    const ledger = await compareLedgers(h, urls, newInns, samples, 30_000);
    const result = {
      name,
      failoverWaitMs,
      requests: samples.length,
      paid: samples.filter((s) => s.kind === 'paid').length,
      cached: samples.filter((s) => s.kind === 'cached').length,
      clientErrors: samples.filter(isClientError).length,
      clientErrorsBy: errorsBy(samples),
      paidErrors: samples.filter((s) => s.kind === 'paid' && isClientError(s)).length,
      cachedErrors: samples.filter((s) => s.kind === 'cached' && isClientError(s)).length,
      failovers: failovers.map((f) => ({
        slot: f.slot,
        killedMaster: f.from,
        promoted: f.to,
        durationMs: Math.round(f.promotedAt - f.killedAt),
        // Errors of requests in flight while this slot had no master (kill to promotion).
        errors: samples.filter((s) => isClientError(s) && inFailover([f])(s)).length,
      })),
      // From the first client error's send to the last one's answer (0: none).
      errorSpanMs: errorSpan(samples),
      latencyDuringFailoverMs: {
        all: latencies(during),
        paid: latencies(during.filter((s) => s.kind === 'paid')),
        cached: latencies(during.filter((s) => s.kind === 'cached')),
      },
      latencyWholeRunMs: latencies(samples),
      slowest: [...samples]
        .sort((a, b) => b.end - b.start - (a.end - a.start))
        .slice(0, 5)
        .map((s) => ({
          kind: s.kind,
          ms: Math.round(s.end - s.start),
          sentAfterStartMs: Math.round(s.start - t0),
          status: s.status,
        })),
      ledger: {
        equal:
          ledger.doubled.length === 0 &&
          ledger.missing.length === 0 &&
          ledger.extra.length === 0 &&
          ledger.gatewayMinor === ledger.upstreamMinor,
        upstreamMinor: ledger.upstreamMinor,
        gatewayMinor: ledger.gatewayMinor,
        toldClientsMinor: ledger.toldMinor,
        doubled: ledger.doubled.length,
        missing: ledger.missing.length,
        extra: ledger.extra.length,
        pending: ledger.pending,
        outbox: ledger.outbox,
      },
      runMs: Math.round(runMs),
      loadAvg: loadavg().map((x) => Math.round(x * 100) / 100),
    };
    const d = result.latencyDuringFailoverMs.all;
    console.log(
      `${name} (failoverWaitMs ${failoverWaitMs}): ${result.requests} requests (${result.paid} paid), ` +
        `${result.clientErrors} client errors ${JSON.stringify(result.clientErrorsBy)} over ${result.errorSpanMs} ms; failovers ` +
        `${result.failovers.map((f) => `${f.slot} ${f.durationMs} ms (${f.errors} errors)`).join(', ')}; ` +
        `during: ${d.count} requests p50 ${d.p50} p99 ${d.p99} max ${d.max} ms; ledger ` +
        `${result.ledger.equal ? 'equals' : 'DIFFERS FROM'} the emulator's (${result.ledger.upstreamMinor} minor)`,
    );
    return result;
  } finally {
    await gateways.close();
    await cluster.stop();
  }
}

function errorSpan(samples: Sample[]): number {
  const errors = samples.filter(isClientError);
  if (errors.length === 0) return 0;
  return Math.round(Math.max(...errors.map((s) => s.end)) - Math.min(...errors.map((s) => s.start)));
}

const runs = [];
for (let round = 0; round < rounds; round++)
  for (const [i, c] of CASES.entries())
    runs.push({
      round: round + 1,
      ...(await run(c.name, c.failoverWaitMs, 20_000 + (round * 2 + i) * 30_000)),
    });
const results = {
  at: new Date().toISOString(),
  machine: { cpus: cpus().length, node: process.version },
  setup: {
    cluster: '3 masters + 3 replicas, redis-server 7, cluster-node-timeout 1000 ms, full coverage required',
    gateways: 2,
    clients: { paid: PAID, cached: CACHED, pauseMs: 10 },
    deadlineMs: DEADLINE_MS,
    killed: SLOTS.map((s) => `master of ${s}`),
    upstream: 'emulator in process, dossier 10-40 ms, key limit raised',
  },
  runs,
};
await mkdir('bench/results', { recursive: true });
await writeFile('bench/results/redis-cluster-failover.json', `${JSON.stringify(results, null, 2)}\n`);
const afters = runs.filter((r) => r.name === 'after');
const targets: Array<[string, boolean]> = [
  ['0 client errors through the failovers (after)', afters.every((r) => r.clientErrors === 0)],
  ['the gateway ledger equals the emulator ledger (every run)', runs.every((r) => r.ledger.equal)],
];
for (const [target, met] of targets) console.log(`${met ? 'met   ' : 'MISSED'} ${target}`);
process.exit(0);
