// What one cache HIT costs in instructions, counted by valgrind's callgrind: unlike req/s, CPU
// time or a sampling profile, a count is not made of time the machine's other work took. Each server (the gateway of each build given,
// memory store, and the node:http ceiling answering the first build's captured bytes, as
// bench/cache-hits.ts does) runs under callgrind with instrumentation off while it starts; then
// for each in turn: instrumentation on, `--warm` requests (4 keep-alive connections from this
// process), the counters zeroed, `--requests` requests, a dump. Instructions per request of the
// main thread (JavaScript, Node and V8 on the request's path, the scavenges it causes) and of all
// threads (plus background compilation and concurrent marking, which run ~50x slower under
// valgrind relative to the requests, so their share here is inflated). A process's own timers
// (memo renewals, flushes, metrics) run by wall time, and a request under valgrind takes ~50x
// longer, so the wall time of the counted requests (which the machine's load stretches) would
// add timer work to each: each server is first counted 10 s idle, and that rate times the
// counted requests' wall time is taken off. Counts still move between runs (one build read
// 119-146k per HIT in four runs, with when background compiles and GC ran): it shows a gap of
// 20-50 % to the bare server, it does not rank builds 10 % apart.
//   node bin/run-ts.js bench/hit-instructions.ts [--target bank|identity|gzip|br] [--warm 6000]
//        [--requests 5000] [--build DIR]...   (default build: this checkout; each DIR a checkout
//        with dist/ built and node_modules, e.g. `git worktree add /tmp/before <rev>`)
// Needs valgrind (`apt-get install valgrind`). Writes bench/results/hit-instructions.json.
// Must never: leave a process running, or be read as a time (an instruction of a scavenge and of
// a string compare cost differently; it ranks builds, it does not price them).
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, get } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { type Child, ensureBuilt, startCpgw, stopCpgw } from './cpgw-process.ts';
import { hitCell } from './hit-cells.ts';
import { writeBenchGatewayConfig } from './pass-through-rig.ts';
import { captureSteady, startCeiling } from './raw-http.ts';

const { values } = parseArgs({
  options: {
    target: { type: 'string', default: 'bank' },
    warm: { type: 'string', default: '6000' },
    requests: { type: 'string', default: '5000' },
    build: { type: 'string', multiple: true },
  },
});
const chosen = hitCell(values.target);
if (!chosen) throw new Error('usage: --target bank|identity|gzip|br');
const target = chosen;
const WARM = Number(values.warm);
const REQUESTS = Number(values.requests);
/** How long each server is counted idle, for the rate of its own timers' work. */
const IDLE_MS = 10_000;
const builds = (values.build?.length ? values.build : ['.']).map((b) => resolve(b));
ensureBuilt();

const dir = await mkdtemp(join(tmpdir(), 'cpgw-bench-instr-'));
const callgrind = (name: string) => [
  'valgrind',
  '--tool=callgrind',
  `--callgrind-out-file=${join(dir, name)}/cg.%p`,
  '--separate-threads=yes',
  '--instr-atstart=no',
  '--smc-check=all-non-file',
];

/** `count` GETs of the target over 4 keep-alive connections; the statuses and X-Cache seen. */
function load(url: string, headers: Record<string, string>, count: number): Promise<Record<string, number>> {
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const seen: Record<string, number> = {};
  let sent = 0;
  let done = 0;
  return new Promise((resolveLoad, reject) => {
    const one = () => {
      if (sent >= count) return;
      sent++;
      get(`${url}${target.path}`, { agent, headers }, (res) => {
        const key = `${res.statusCode} ${res.headers['x-cache'] ?? ''}`.trim();
        seen[key] = (seen[key] ?? 0) + 1;
        res.resume();
        res.on('end', () => {
          if (++done === count) {
            agent.destroy();
            resolveLoad(seen);
          } else one();
        });
      }).on('error', reject);
    };
    for (let i = 0; i < 4; i++) one();
  });
}

/** Instructions in dump number `dump` callgrind wrote for `pid` (thread 1 is the main thread). */
function counted(name: string, pid: number, dump: number): { main: number; all: number } {
  const files = readdirSync(join(dir, name)).filter((f) => f.startsWith(`cg.${pid}.${dump}-`));
  let main = 0;
  let all = 0;
  for (const f of files) {
    const text = readFileSync(join(dir, name, f), 'utf8');
    const n = Number(/^(?:summary|totals):\s+(\d+)/m.exec(text)?.[1] ?? 0);
    all += n;
    if (f.endsWith('-01')) main = n;
  }
  return { main, all };
}

const control = (command: string, pid: number) =>
  execFileSync('callgrind_control', [command, String(pid)], { stdio: 'ignore' });

const loadAtStart = loadavg()[0]!;
const children: Child[] = [];
const rows: Array<{
  server: string;
  main_per_request: number;
  all_threads_per_request: number;
  idle_main_per_s: number;
  measured_ms: number;
}> = [];
try {
  const emu = await startCpgw(
    ['emulator', '--port', '0', '--api-key', 'bench-upstream-key;name=bench', '--key-limit', '60'],
    {},
    /http:\/\/127\.0\.0\.1:\d+/,
  );
  children.push(emu.child);
  const { configFile, token } = await writeBenchGatewayConfig({ dir });
  const headers = { authorization: `Bearer ${token}`, 'accept-encoding': target.acceptEncoding };
  const servers: Array<{ name: string; url: string; pid: number }> = [];
  for (const [i, root] of builds.entries()) {
    const name = `gateway-${i}`;
    await mkdir(join(dir, name));
    const gw = await startCpgw(
      ['start'],
      {
        CPGW_CONFIG: configFile,
        CPGW_PORT: '0',
        CPGW_METRICS_PORT: '0',
        CPGW_UPSTREAM_URL: emu.match[0],
        CPGW_UPSTREAM_API_KEY: 'bench-upstream-key',
      },
      /listening on (http:\/\/[^\s)]+)/,
      join(root, 'bin/cpgw.js'),
      callgrind(name),
      300_000,
    );
    children.push(gw.child);
    servers.push({ name: `gateway ${root}`, url: gw.match[1]!, pid: gw.child.process.pid! });
  }
  const { first } = await captureSteady(servers[0]!.url, target.path, headers, target.encoding);
  await mkdir(join(dir, 'ceiling'));
  const ceiling = await startCeiling(
    dir,
    [{ path: target.path, acceptEncoding: target.acceptEncoding, answer: first }],
    callgrind('ceiling'),
    {},
    300_000,
  );
  children.push(ceiling.child);
  servers.push({ name: 'node:http ceiling', url: ceiling.url, pid: ceiling.child.process.pid! });
  for (const [i, s] of servers.entries()) {
    const name = i < builds.length ? `gateway-${i}` : 'ceiling';
    control('--instr=on', s.pid);
    await load(s.url, headers, WARM);
    // The process's own timers (memo renewals, flushes, metrics) run by wall time, and under
    // valgrind a request takes ~50x longer: count them alone first, then take their rate off.
    control('--zero', s.pid);
    const idleFrom = performance.now();
    await new Promise((r) => setTimeout(r, IDLE_MS));
    control('--dump', s.pid);
    const idleMs = performance.now() - idleFrom;
    control('--zero', s.pid);
    const from = performance.now();
    const seen = await load(s.url, headers, REQUESTS);
    control('--dump', s.pid);
    const busyMs = performance.now() - from;
    if (i < builds.length && seen['200 HIT'] !== REQUESTS)
      throw new Error(`${s.name}: not every measured answer was a HIT: ${JSON.stringify(seen)}`);
    await new Promise((r) => setTimeout(r, 300));
    const idle = counted(name, s.pid, 1);
    const busy = counted(name, s.pid, 2);
    const share = busyMs / idleMs;
    const counts = {
      main: Math.round((busy.main - idle.main * share) / REQUESTS),
      all: Math.round((busy.all - idle.all * share) / REQUESTS),
    };
    rows.push({
      server: s.name,
      main_per_request: counts.main,
      all_threads_per_request: counts.all,
      idle_main_per_s: Math.round((idle.main * 1000) / idleMs),
      measured_ms: Math.round(busyMs),
    });
    console.log(
      `${s.name}: ${counts.main} instructions per request (main thread), ${counts.all} (all threads)`,
    );
  }
} finally {
  for (const child of children.reverse()) await stopCpgw(child);
  await rm(dir, { recursive: true, force: true });
}
const report = {
  bench: 'hit-instructions',
  date: new Date().toISOString(),
  node: process.version,
  target: values.target,
  warm: WARM,
  requests: REQUESTS,
  load: [loadAtStart, loadavg()[0]],
  rows,
};
await writeFile('bench/results/hit-instructions.json', `${JSON.stringify(report, null, 2)}\n`);
console.log('written bench/results/hit-instructions.json');
