// Benchmark: how long after the leader has its answer a follower on ANOTHER replica has it
// (issue 33: "< 5 ms p50 after the leader has it (wake it by the bus, not by polling)"). Two
// gateway replicas on one Redis, the emulator as upstream: by default the test harness, all in
// this one process; with --processes each replica is its own `cpgw start` process and the
// emulator its own `cpgw emulator` (as in production: what one replica does after its answer then
// costs the other no time on a shared event loop).
// Each round: a company nobody has read, its upstream answer delayed 80 ms; an app reads it
// through replica A, 20 ms later another read through replica B, which finds A's lead and
// follows it. The figure is B's answer time minus A's; both answers must be the same body and
// the upstream must have seen one call. Writes bench/results/coalesce-follower.json
// (coalesce-follower-processes.json with --processes).
// Run: node bin/run-ts.js bench/coalesce-follower.ts [rounds=50, at most 50] [--processes]   (REDIS_URL or a private redis-server)
// Must never: touch Redis keys outside its own prefix (--processes: deleted at the end).
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { knownInns } from '../test/emulator/emulator-harness.ts';
import { startRedisReplicas } from '../test/helpers/gateway-harness.ts';
import { deleteKeysUnder } from '../test/helpers/redis.ts';
import { startCpgw, stopCpgw } from './cpgw-process.ts';
import { bankReadCheck, directBankP50, type MachineCheck } from './machine-check.ts';
import { startLiftedEmulator, writeLiftedGatewayConfig } from './pass-through-rig.ts';

const PROCESSES = process.argv.includes('--processes');
// At most 55 reads a minute in all: the upstream lets one key make 60 (the harness's emulator).
const ROUNDS = Math.min(50, Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 50));
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Two replicas of one gateway on one Redis, and what the bench asks of the upstream. */
interface Rig {
  a: string;
  b: string;
  token: string;
  /** The next company read upstream answers 80 ms late. */
  delayNext(): Promise<void>;
  /** Upstream calls for the company so far. */
  upstreamCalls(inn: string): Promise<number>;
  /** --processes: the machine check, from bank-record reads straight from the emulator (machine-check.ts). */
  machine(): Promise<MachineCheck | null>;
  close(): Promise<void>;
}

/** The emulator's request log (GET /_emulator/requests). */
interface RequestLog {
  requests: Array<{ path: string }>;
}
const callsFor = (inn: string, log: RequestLog) => log.requests.filter((r) => r.path.includes(inn)).length;

async function harnessRig(): Promise<Rig> {
  const replicas = await startRedisReplicas();
  if (!replicas) throw new Error('no Redis: set REDIS_URL or install redis-server');
  const { h, second } = replicas;
  return {
    a: h.gateway.url,
    b: second.url,
    token: h.tokens.alpha!,
    delayNext: async () => {
      await h.emu('/faults', { route: 'company', count: 1, latency_ms: 80 });
    },
    upstreamCalls: async (inn) =>
      callsFor(inn, (await h.emu('/requests?route=company')) as unknown as RequestLog),
    // One process: not how replicas are deployed, and not what the 5 ms is judged on.
    machine: async () => null,
    close: () => replicas.close(),
  };
}

async function processRig(): Promise<Rig> {
  const key = 'bench-follower';
  const prefix = `cpgw-bench-follower-${randomBytes(4).toString('hex')}:`;
  // Every company read answers 80 ms late (one upstream call per round); a second key (its own
  // account) reads bank records straight from it for the machine check.
  const direct = 'bench-follower-direct';
  const emu = await startLiftedEmulator([key, direct], ['--latency', 'company=80']);
  const { configFile, token } = await writeLiftedGatewayConfig();
  const env = {
    CPGW_CONFIG: configFile,
    CPGW_PORT: '0',
    CPGW_UPSTREAM_URL: emu.url,
    CPGW_UPSTREAM_API_KEY: key,
    CPGW_REDIS_URL: REDIS_URL,
    CPGW_STORE_PREFIX: prefix,
  };
  const ready = /listening on (http:\/\/[^\s)]+)/;
  const ga = await startCpgw(['start'], env, ready);
  const gb = await startCpgw(['start'], env, ready);
  const control = { authorization: `Bearer ${key}` };
  return {
    a: ga.match[1]!,
    b: gb.match[1]!,
    token,
    delayNext: async () => {},
    upstreamCalls: async (inn) => {
      const res = await fetch(`${emu.url}/_emulator/requests?route=company`, { headers: control });
      return callsFor(inn, (await res.json()) as RequestLog);
    },
    machine: async () =>
      bankReadCheck(await directBankP50(emu.url, direct), 'a quieter machine, or compare builds in one run'),
    close: async () => {
      await Promise.all([stopCpgw(ga.child), stopCpgw(gb.child)]);
      await stopCpgw(emu.child);
      await deleteKeysUnder(REDIS_URL, [prefix]);
    },
  };
}

const rig = PROCESSES ? await processRig() : await harnessRig();
const auth = { authorization: `Bearer ${rig.token}` };

async function read(url: string, inn: string): Promise<{ at: number; body: string; status: number }> {
  const res = await fetch(`${url}/v1/companies/${inn}`, { headers: auth });
  const body = await res.text();
  return { at: performance.now(), body, status: res.status };
}

const gaps: number[] = [];
// Each read's own time (sent to answered): a leader answered sooner widens the gap by as much
// while the follower is answered no later; the follower's own time tells the two apart.
const leaderMs: number[] = [];
const followerMs: number[] = [];
let calls = 0;
let machine: MachineCheck | null = null;
try {
  const inns = knownInns(ROUNDS + 5, 5_000);
  for (const [i, inn] of inns.entries()) {
    await rig.delayNext();
    const sentA = performance.now();
    const a = read(rig.a, inn);
    await new Promise((r) => setTimeout(r, 20));
    const sentB = performance.now();
    const b = read(rig.b, inn);
    const [ra, rb] = await Promise.all([a, b]);
    if (ra.status !== 200 || rb.status !== 200 || ra.body !== rb.body)
      throw new Error(`round ${i}: answers differ (${ra.status}, ${rb.status})`);
    const upstream = await rig.upstreamCalls(inn);
    calls += upstream;
    if (i >= 5) {
      // the first rounds warm both replicas up
      gaps.push(rb.at - ra.at);
      leaderMs.push(ra.at - sentA);
      followerMs.push(rb.at - sentB);
    }
  }
  machine = await rig.machine();
} finally {
  await rig.close();
}

for (const xs of [gaps, leaderMs, followerMs]) xs.sort((x, y) => x - y);
const quantile = (xs: number[], q: number) =>
  Number(xs[Math.min(xs.length - 1, Math.floor(q * xs.length))]!.toFixed(2));
const at = (q: number) => quantile(gaps, q);
const result = {
  at: new Date().toISOString(),
  rounds: gaps.length,
  followerAfterLeaderMs: { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1) },
  leaderReadMs: { p50: quantile(leaderMs, 0.5), p90: quantile(leaderMs, 0.9) },
  followerReadMs: { p50: quantile(followerMs, 0.5), p90: quantile(followerMs, 0.9) },
  upstreamCallsPerRound: calls / (gaps.length + 5),
  replicas: PROCESSES ? 'separate processes' : 'one process (the test harness)',
  /** Issue 33: the follower < 5 ms p50 after the leader (judged on --processes: replicas as deployed). */
  issue_33_target_met: at(0.5) < 5,
  /** --processes: whether this machine can judge the 5 ms (machine-check.ts); null in one process. */
  machine_check: machine,
  note: 'B (another replica) follows A; B answer time minus A answer time',
};
console.log(
  `follower on another replica, after the leader: p50 ${result.followerAfterLeaderMs.p50} ms (issue 33's < 5 ms: ${result.issue_33_target_met ? 'met' : 'missed'}), p90 ${result.followerAfterLeaderMs.p90} ms, p99 ${result.followerAfterLeaderMs.p99} ms, max ${result.followerAfterLeaderMs.max} ms; upstream calls per round ${result.upstreamCallsPerRound}; each read's own time p50: leader ${result.leaderReadMs.p50} ms, follower ${result.followerReadMs.p50} ms (sent 20 ms later)`,
);
if (machine) console.log(machine.text);
writeFileSync(
  PROCESSES ? 'bench/results/coalesce-follower-processes.json' : 'bench/results/coalesce-follower.json',
  `${JSON.stringify(result, null, 2)}\n`,
);
