// Benchmark: how long after the leader has its answer a follower on ANOTHER replica has it
// (issue 33: "< 5 ms p50 after the leader has it (wake it by the bus, not by polling)"). Two
// gateway replicas on one Redis (the test harness, in one process), the emulator as upstream.
// Each round: a company nobody has read, its upstream answer delayed 80 ms; an app reads it
// through replica A, 20 ms later another read through replica B, which finds A's lead and
// follows it. The figure is B's answer time minus A's; both answers must be the same body and
// the upstream must have seen one call. Writes bench/results/coalesce-follower.json.
// Run: node bin/run-ts.js bench/coalesce-follower.ts [rounds=50, at most 50]   (REDIS_URL or a private redis-server)
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { knownInns } from '../test/emulator/emulator-harness.ts';
import { startRedisReplicas } from '../test/helpers/gateway-harness.ts';

// At most 55 reads a minute in all: the upstream lets one key make 60.
const ROUNDS = Math.min(50, Number(process.argv[2] ?? 50));
const replicas = await startRedisReplicas();
if (!replicas) throw new Error('no Redis: set REDIS_URL or install redis-server');
const { h, second } = replicas;
const auth = { authorization: `Bearer ${h.tokens.alpha}` };

async function read(url: string, inn: string): Promise<{ at: number; body: string; status: number }> {
  const res = await fetch(`${url}/v1/companies/${inn}`, { headers: auth });
  const body = await res.text();
  return { at: performance.now(), body, status: res.status };
}

const gaps: number[] = [];
let calls = 0;
try {
  const inns = knownInns(ROUNDS + 5, 5_000);
  for (const [i, inn] of inns.entries()) {
    await h.emu('/faults', { route: 'company', count: 1, latency_ms: 80 });
    const a = read(h.gateway.url, inn);
    await new Promise((r) => setTimeout(r, 20));
    const b = read(second.url, inn);
    const [ra, rb] = await Promise.all([a, b]);
    if (ra.status !== 200 || rb.status !== 200 || ra.body !== rb.body)
      throw new Error(`round ${i}: answers differ (${ra.status}, ${rb.status})`);
    const upstream = (
      (await h.emu('/requests?route=company')) as { requests: Array<{ path: string }> }
    ).requests.filter((r) => r.path.includes(inn)).length;
    calls += upstream;
    if (i >= 5) gaps.push(rb.at - ra.at); // the first rounds warm both replicas up
  }
} finally {
  await replicas.close();
}

gaps.sort((x, y) => x - y);
const at = (q: number) => Number(gaps[Math.min(gaps.length - 1, Math.floor(q * gaps.length))]!.toFixed(2));
const result = {
  at: new Date().toISOString(),
  rounds: gaps.length,
  followerAfterLeaderMs: { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1) },
  upstreamCallsPerRound: calls / (gaps.length + 5),
  note: 'B (another replica) follows A; B answer time minus A answer time',
};
console.log(
  `follower on another replica, after the leader: p50 ${result.followerAfterLeaderMs.p50} ms, p90 ${result.followerAfterLeaderMs.p90} ms, p99 ${result.followerAfterLeaderMs.p99} ms, max ${result.followerAfterLeaderMs.max} ms; upstream calls per round ${result.upstreamCallsPerRound}`,
);
writeFileSync('bench/results/coalesce-follower.json', `${JSON.stringify(result, null, 2)}\n`);
