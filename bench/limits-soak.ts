// Soak benchmark of the shared rate budget at the upstream's real limits (issue #6):
// three `cpgw start` processes on one Redis in front of one `cpgw emulator` process (which
// enforces 60 key calls and 20 searches per minute and answers 429 past them).
//   1. Load: five apps send 600 searches and 600 dossier reads of distinct companies as fast
//      as they can (8 workers each, X-Max-Wait-Ms 20 s, a gateway 429 is retried after its
//      Retry-After), spread over the three gateways.
//   2. Kill: one gateway is killed with SIGKILL mid-load; the other two carry the load.
//   3. Fairness: the load stops; one app floods searches at 10x the limit (one every 300 ms,
//      whatever the answers) and another sends one search every 10 s.
//
// The emulator's request log (with its timestamps) is the truth. Printed and written to
// bench/results/limits-soak.json: the most calls of each class in ANY 60-second interval, the
// upstream 429s, the share of the allowance used in phase 1, the key calls the two survivors
// made in the 60 s after the kill, and the trickle app's waits in phase 3.
//
// Run: node bin/run-ts.js bench/limits-soak.ts [loadSeconds=120] [afterKillSeconds=130] [fairSeconds=90]
// Needs Redis: REDIS_URL, else redis://127.0.0.1:6379. Only keys under its own prefix are
// written, and they are deleted at the end.
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { newToken, tokenHash } from '../src/auth/tokens.ts';
import { knownInns } from '../test/emulator/emulator-harness.ts';
import { maxInAnyInterval } from '../test/helpers/intervals.ts';
import { deleteKeysUnder } from '../test/helpers/redis.ts';
import { startCpgw } from './cpgw-process.ts';

const LOAD_S = Number(process.argv[2] ?? 120);
const AFTER_KILL_S = Number(process.argv[3] ?? 130);
const FAIR_S = Number(process.argv[4] ?? 90);
const UPSTREAM_KEY = 'soak-upstream-key';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = `cpgw-soak-${randomBytes(4).toString('hex')}:`;
const FLOODERS = ['app-a', 'app-b', 'app-c', 'app-d', 'app-e'];
const WORKERS_PER_FLOODER = 8;
const MAX_WAIT_MS = 20_000;

const emu = await startCpgw(
  ['emulator', '--port', '0', '--api-key', `${UPSTREAM_KEY};name=soak`, '--wallet', '100000000000'],
  {},
  /http:\/\/127\.0\.0\.1:\d+/,
);
const emuUrl = emu.match[0];

const apps = [...FLOODERS, 'trickle'];
const FLOOD_APP = FLOODERS[0]!;
const tokens = Object.fromEntries(apps.map((a) => [a, newToken()]));
const dir = await mkdtemp(join(tmpdir(), 'cpgw-soak-'));
const configFile = join(dir, 'gateway.yaml');
await writeFile(
  configFile,
  [
    'log:',
    '  level: warn',
    'store:',
    `  redisUrl: "${REDIS_URL}"`,
    `  prefix: "${PREFIX}"`,
    'apps:',
    ...apps.flatMap((a) => [
      `  - name: ${a}`,
      `    tokenHash: "${tokenHash(tokens[a]!)}"`,
      '    scopes: [read:companies]',
    ]),
    '',
  ].join('\n'),
);
const gateways = await Promise.all(
  [0, 1, 2].map(() =>
    startCpgw(
      ['start'],
      {
        CPGW_CONFIG: configFile,
        CPGW_PORT: '0',
        CPGW_UPSTREAM_URL: emuUrl,
        CPGW_UPSTREAM_API_KEY: UPSTREAM_KEY,
      },
      /listening on (http:\/\/[^\s)]+)/,
    ),
  ),
);
const urls = gateways.map((g) => g.match[1]!);
const pools = urls.map((u) => new Pool(u, { connections: 64 }));
const alive = [true, true, true];
console.log(`emulator ${emuUrl}; gateways ${urls.join(', ')}; Redis prefix ${PREFIX}`);

// Work: 600 searches and 600 dossier reads of distinct companies, shared by the flooders.
const inns = knownInns(600, 5_000);
const work: string[] = [];
for (let i = 0; i < 600; i++) {
  work.push(`/v1/search?q=${encodeURIComponent(`soak ${i}`)}`);
  work.push(`/v1/companies/${inns[i]}`);
}
const counts = {
  ok: 0,
  gateway429: 0,
  other: 0,
  connectionErrors: 0,
  otherStatuses: {} as Record<string, number>,
};
/** The trickle app's waits: during the five-app load (phases 1-2) and against one flooder (3). */
const waits = { load: [] as number[], fair: [] as number[] };
const trickleRefused = { load: 0, fair: 0 };
let stop = false;
let rr = 0;

function pick(): number {
  for (let i = 0; i < 3; i++) {
    const n = rr++ % 3;
    if (alive[n]) return n;
  }
  return 0;
}

async function call(app: string, path: string): Promise<{ status: number; retryAfter: number }> {
  const n = pick();
  const res = await pools[n]!.request({
    method: 'GET',
    path,
    headers: { authorization: `Bearer ${tokens[app]}`, 'x-max-wait-ms': String(MAX_WAIT_MS) },
  });
  await res.body.arrayBuffer();
  return { status: res.statusCode, retryAfter: Number(res.headers['retry-after'] ?? 1) };
}

async function worker(app: string): Promise<void> {
  while (!stop) {
    const path = work.shift();
    if (!path) return;
    try {
      const { status, retryAfter } = await call(app, path);
      if (status === 200) counts.ok++;
      else if (status === 429) {
        counts.gateway429++;
        work.push(path); // try it again later
        await new Promise((r) => setTimeout(r, Math.min(retryAfter, 5) * 1000));
      } else {
        counts.other++;
        counts.otherStatuses[status] = (counts.otherStatuses[status] ?? 0) + 1;
      }
    } catch {
      counts.connectionErrors++;
      work.push(path);
    }
  }
}

let stopFair = false;
async function trickle(phase: 'load' | 'fair', done: () => boolean): Promise<void> {
  for (let i = 0; !done(); i++) {
    const t0 = performance.now();
    try {
      const { status } = await call('trickle', `/v1/search?q=${encodeURIComponent(`trickle ${phase} ${i}`)}`);
      if (status === 200) waits[phase].push(performance.now() - t0);
      else trickleRefused[phase]++; // a 429: its queue could not start it within 20 s
    } catch {
      counts.connectionErrors++;
    }
    const next = t0 + 10_000 - performance.now();
    if (next > 0) await new Promise((r) => setTimeout(r, next));
  }
}

/** 10x the search limit: one search every 300 ms, not waiting for answers. */
const flood = { sent: 0, ok: 0, refused: 0 };
async function floodSearch(): Promise<void> {
  const inflight: Promise<void>[] = [];
  for (let i = 0; !stopFair; i++) {
    flood.sent++;
    inflight.push(
      call(FLOOD_APP, `/v1/search?q=${encodeURIComponent(`flood ${i}`)}`)
        .then(({ status }) => {
          if (status === 200) flood.ok++;
          else flood.refused++;
        })
        .catch(() => {
          flood.refused++;
        }),
    );
    await new Promise((r) => setTimeout(r, 300));
  }
  await Promise.all(inflight);
}

const loadStart = Date.now();
const running = [
  ...FLOODERS.flatMap((app) => Array.from({ length: WORKERS_PER_FLOODER }, () => worker(app))),
  trickle('load', () => stop),
];
const progress = setInterval(() => {
  const s = Math.round((Date.now() - loadStart) / 1000);
  console.log(
    `t=${s}s ok=${counts.ok} gateway429=${counts.gateway429} trickle=${waits.load.length + waits.fair.length} left=${work.length}`,
  );
}, 10_000);
await new Promise((r) => setTimeout(r, LOAD_S * 1000));
const killAt = Date.now();
gateways[2]!.child.process.kill('SIGKILL');
alive[2] = false;
console.log(`t=${LOAD_S}s SIGKILL gateway 3 (${urls[2]})`);
await new Promise((r) => setTimeout(r, AFTER_KILL_S * 1000));
stop = true;
await Promise.race([Promise.all(running), new Promise((r) => setTimeout(r, MAX_WAIT_MS + 5_000))]);
const fairStart = Date.now();
console.log(`phase 3: ${FLOOD_APP} floods search at 10x, trickle sends one every 10 s`);
const fair = [floodSearch(), trickle('fair', () => stopFair)];
await new Promise((r) => setTimeout(r, FAIR_S * 1000));
stopFair = true;
await Promise.all(fair);
clearInterval(progress);

// The truth: the emulator's request log.
const log = (await (
  await fetch(`${emuUrl}/_emulator/requests`, { headers: { authorization: `Bearer ${UPSTREAM_KEY}` } })
).json()) as { requests: Array<{ at_ms: number; route: string; status: number }> };
const calls = log.requests.filter((r) => r.route !== 'openapi');
const keyCalls = calls
  .filter((r) => r.route !== 'suggest')
  .map((r) => r.at_ms)
  .sort((a, b) => a - b);
const searchCalls = calls
  .filter((r) => r.route === 'search')
  .map((r) => r.at_ms)
  .sort((a, b) => a - b);

const between = (times: number[], from: number, to: number) =>
  times.filter((t) => t >= from && t < to).length;
// The emulator process runs on the real clock, so its at_ms and ours compare directly.
const loadKey = between(keyCalls, loadStart, killAt);
const loadSearch = between(searchCalls, loadStart, killAt);
const afterKill = between(keyCalls, killAt, killAt + 60_000);
const secondMinute = between(keyCalls, killAt + 60_000, killAt + 120_000);
function summary(xs: number[]) {
  const sorted = [...xs].sort((a, b) => a - b);
  const q = (p: number) =>
    sorted.length ? Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!) : null;
  return { samples: sorted.length, medianMs: q(0.5), p95Ms: q(0.95), maxMs: q(1) };
}

const results = {
  at: new Date().toISOString(),
  machine: { cpus: cpus().length, node: process.version },
  setup: {
    gateways: 3,
    apps: apps.length,
    flooders: FLOODERS.length,
    workersPerFlooder: WORKERS_PER_FLOODER,
    loadSeconds: LOAD_S,
    afterKillSeconds: AFTER_KILL_S,
    maxWaitMs: MAX_WAIT_MS,
  },
  upstream: {
    keyCalls: keyCalls.length,
    searches: searchCalls.length,
    dossiers: calls.filter((r) => r.route === 'company').length,
    status429: calls.filter((r) => r.status === 429).length,
    maxKeyIn60s: maxInAnyInterval(keyCalls, 60_000),
    maxSearchIn60s: maxInAnyInterval(searchCalls, 60_000),
  },
  loadPhase: {
    keyCalls: loadKey,
    keyAllowance: Math.round((60 * LOAD_S) / 60),
    keyUsedPct: Math.round((1000 * loadKey) / ((60 * LOAD_S) / 60)) / 10,
    searches: loadSearch,
    searchAllowance: Math.round((20 * LOAD_S) / 60),
    searchUsedPct: Math.round((1000 * loadSearch) / ((20 * LOAD_S) / 60)) / 10,
  },
  afterKill: {
    firstMinute: { keyCalls: afterKill, usedPct: Math.round((1000 * afterKill) / 60) / 10 },
    secondMinute: { keyCalls: secondMinute, usedPct: Math.round((1000 * secondMinute) / 60) / 10 },
  },
  fairness: {
    seconds: FAIR_S,
    flood,
    searchesUpstream: between(searchCalls, fairStart, fairStart + FAIR_S * 1000 + 1_000),
  },
  trickle: {
    duringLoad: { ...summary(waits.load), refused: trickleRefused.load },
    againstOneFlooder: { ...summary(waits.fair), refused: trickleRefused.fair },
  },
  apps: counts,
};
console.log(JSON.stringify(results, null, 2));
await mkdir('bench/results', { recursive: true });
await writeFile('bench/results/limits-soak.json', `${JSON.stringify(results, null, 2)}\n`);

for (const p of pools) await p.destroy();
for (const g of gateways) g.child.process.kill('SIGTERM');
emu.child.process.kill('SIGTERM');
await deleteKeysUnder(REDIS_URL, [PREFIX]);
// The issue's targets, each printed. "Regains the dead replica's capacity within 60 s": in the
// first minute after the kill the survivors use the allowance as fully as three replicas did
// (within 5 points: two pumps catch a freed slot a little later than three, see
// docs/rate-limits.md), i.e. nothing stays held by the dead one.
const targets: Array<[string, boolean]> = [
  ['zero upstream 429s', results.upstream.status429 === 0],
  ['at most 60 key calls in any 60 s', results.upstream.maxKeyIn60s <= 60],
  ['at most 20 searches in any 60 s', results.upstream.maxSearchIn60s <= 20],
  ['at least 95 % of the key allowance used (three replicas)', results.loadPhase.keyUsedPct >= 95],
  [
    'capacity back within 60 s of the kill (first minute within 5 points of three replicas)',
    results.afterKill.firstMinute.usedPct >= results.loadPhase.keyUsedPct - 5,
  ],
  [
    'trickle median wait under 5 s against a 10x flood',
    (results.trickle.againstOneFlooder.medianMs ?? Infinity) < 5_000,
  ],
];
for (const [name, met] of targets) console.log(`${met ? 'met   ' : 'MISSED'} ${name}`);
const ok = targets.every(([, met]) => met);
console.log(ok ? 'limits-soak: all targets met' : 'limits-soak: TARGET MISSED (see above)');
process.exit(ok ? 0 : 1);
