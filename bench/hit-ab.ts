// Benchmark: A/B of cache HITs between builds, in ONE run. Each build given (a checkout with
// node_modules, e.g. a `git worktree`; `<dir>=<node binary>` runs it on another Node) runs its own
// gateway (memory store, or with --store embedded the default's SQLite money; its own upstream
// key and account on one emulator), at the log level asked for: `info` by default, the gateway's
// own default, so each HIT also writes its request log line (README "Request log line"), which
// the other HIT benches leave off (`warn`). Every round
// loads each gateway in turn with wrk (one thread, the order reversed every round) for the same
// cell, and reads the CPU the gateway process spent over that load (/proc: all threads and the
// main thread, 10 ms ticks). Prints the medians over the rounds per build, req/s, CPU µs per HIT
// and p50/p99, and writes bench/results/hit-ab.json. Counts of CPU move less than req/s on a
// shared machine; compare builds within one run only. The gateways run pinned to one CPU and this
// process with wrk to another (bench/cpu-pin.ts) unless --no-pin.
//   node bin/run-ts.js bench/hit-ab.ts [--target bank|identity|gzip|br] [--store memory|embedded] [--connections 16]
//        [--seconds 3] [--rounds 6] [--log-level info|warn] [--no-pin] <build dir>[=<node binary>] ...
// Must never: leave a process running.
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { median } from '../test/helpers/intervals.ts';
import { buildRuns, type Child, cpuTicks, startCpgw, stopCpgw } from './cpgw-process.ts';
import { pinBench, pinningJson, pinningText, pinProcess } from './cpu-pin.ts';
import { hitCell } from './hit-cells.ts';
import { writeBenchGatewayConfig } from './pass-through-rig.ts';
import { runWrk, type WrkRun, wrkAvailable } from './wrk-load.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    target: { type: 'string', default: 'bank' },
    connections: { type: 'string', default: '16' },
    seconds: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '6' },
    'log-level': { type: 'string', default: 'info' },
    store: { type: 'string', default: 'memory' },
    'no-pin': { type: 'boolean', default: false },
  },
});
const target = hitCell(values.target);
const STORE = values.store;
if (!target || positionals.length < 1 || !wrkAvailable() || (STORE !== 'memory' && STORE !== 'embedded')) {
  console.error(
    'usage (needs wrk): bench/hit-ab.ts [--target bank|identity|gzip|br] [--store memory|embedded] [--connections 16] [--seconds 3] [--rounds 6] [--log-level info|warn] <build dir>[=<node>] ...',
  );
  process.exit(2);
}
const CONNECTIONS = Number(values.connections);
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const runs = buildRuns(positionals);

const loadAtStart = loadavg()[0]!;
let pinning: ReturnType<typeof pinBench> = null;
const children: Child[] = [];
const keys = runs.map((_, i) => `hit-ab-${i}`);
const rows: { req_per_s: number[]; cpu_us_all: number[]; cpu_us_main: number[]; wrk: WrkRun[] }[] = runs.map(
  () => ({ req_per_s: [], cpu_us_all: [], cpu_us_main: [], wrk: [] }),
);
try {
  const emu = await startCpgw(
    ['emulator', '--port', '0', ...keys.flatMap((k, i) => ['--api-key', `${k};name=${k};account=${i + 1}`])],
    {},
    /http:\/\/127\.0\.0\.1:\d+/,
  );
  children.push(emu.child);
  // memory: money in memory (store.stateDir null); embedded: the default's SQLite money, a state
  // directory of its own per gateway (cpgw-process.ts).
  const { configFile, token } = await writeBenchGatewayConfig(
    STORE === 'memory' ? { extra: 'store:\n  stateDir: null\n' } : {},
  );
  const headers = { authorization: `Bearer ${token}`, 'accept-encoding': target.acceptEncoding };
  const gateways: { url: string; pid: number }[] = [];
  for (const [i, run] of runs.entries()) {
    const gw = await startCpgw(
      ['start'],
      {
        CPGW_CONFIG: configFile,
        CPGW_PORT: '0',
        CPGW_UPSTREAM_URL: emu.match[0],
        CPGW_UPSTREAM_API_KEY: keys[i]!,
        ...(STORE === 'memory' ? { CPGW_STATE_DIR: '' } : {}),
        CPGW_LOG_LEVEL: values['log-level'],
      },
      /listening on (http:\/\/[^\s)]+)/,
      join(run.dir, 'bin/cpgw.js'),
      [],
      20_000,
      run.node,
    );
    children.push(gw.child);
    gateways.push({ url: gw.match[1]!, pid: gw.child.process.pid! });
    // The entry in the cache, then a HIT checked before any load.
    const pool = new Pool(gw.match[1]!, { connections: 1 });
    for (let n = 0; n < 3; n++) {
      const res = await pool.request({ method: 'GET', path: target.path, headers });
      await res.body.arrayBuffer();
      if (res.statusCode !== 200) throw new Error(`${run.dir}: ${target.path} answered ${res.statusCode}`);
      if (n === 2 && res.headers['x-cache'] !== 'HIT') throw new Error(`${run.dir}: no HIT after two reads`);
    }
    await pool.close();
    await runWrk(`${gw.match[1]!}${target.path}`, headers, CONNECTIONS, 2); // warm-up
  }
  // Each gateway on the server CPU (one is loaded at a time), this process and wrk on the other.
  pinning = pinBench(!values['no-pin']);
  if (pinning) for (const { pid } of gateways) pinProcess(pid, pinning.serverCpu);
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? [...gateways.keys()] : [...gateways.keys()].reverse();
    for (const j of order) {
      const { url, pid } = gateways[j]!;
      const before = cpuTicks(pid);
      const w = await runWrk(`${url}${target.path}`, headers, CONNECTIONS, SECONDS);
      const after = cpuTicks(pid);
      if (w.non2xx || w.socket_errors)
        throw new Error(`${runs[j]!.dir}: ${w.non2xx} non-2xx, ${w.socket_errors} socket errors`);
      const us = (t: number) => Math.round((t * 10_000_000) / w.requests) / 1000;
      rows[j]!.req_per_s.push(w.req_per_s);
      rows[j]!.cpu_us_all.push(us(after.all - before.all));
      rows[j]!.cpu_us_main.push(us(after.main - before.main));
      rows[j]!.wrk.push(w);
    }
    console.error(`round ${r + 1}/${ROUNDS}`);
  }
} finally {
  for (const child of children.reverse()) await stopCpgw(child);
}

console.log(
  `hit-ab: ${values.target} HIT, ${STORE} store, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s, log level ${values['log-level']}, ${pinningText(pinning)}; load ${loadAtStart.toFixed(2)} -> ${loadavg()[0]!.toFixed(2)}; medians over the rounds`,
);
const results = runs.map((run, j) => {
  const row = rows[j]!;
  const out = {
    build: run.node === process.execPath ? run.dir : `${run.dir} on ${run.node}`,
    req_per_s: median(row.req_per_s),
    cpu_us_per_hit: { process: median(row.cpu_us_all), main_thread: median(row.cpu_us_main) },
    p50_ms: median(row.wrk.map((w) => w.p50_ms)),
    p99_ms: median(row.wrk.map((w) => w.p99_ms)),
    rounds: row.req_per_s.map((rps, i) => ({ req_per_s: rps, cpu_us_process: row.cpu_us_all[i]! })),
  };
  console.log(
    `  ${out.build}: ${out.req_per_s} req/s (rounds ${row.req_per_s.join('/')}), CPU per HIT ${out.cpu_us_per_hit.process} µs (main thread ${out.cpu_us_per_hit.main_thread}; rounds ${row.cpu_us_all.join('/')}), p50 ${out.p50_ms} ms, p99 ${out.p99_ms} ms`,
  );
  return out;
});
await mkdir('bench/results', { recursive: true });
await writeFile(
  'bench/results/hit-ab.json',
  `${JSON.stringify(
    {
      bench: 'hit-ab',
      at: new Date().toISOString(),
      node: process.version,
      target: values.target,
      store: STORE,
      connections: CONNECTIONS,
      seconds: SECONDS,
      rounds: ROUNDS,
      log_level: values['log-level'],
      pinning: pinningJson(pinning),
      loadavg_1m_at_start: loadAtStart,
      results,
    },
    null,
    2,
  )}\n`,
);
console.log('written bench/results/hit-ab.json');
