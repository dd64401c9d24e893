// Benchmark: what a cache HIT costs in a gateway that has served other answers first, process by
// process. N fresh gateways (memory store, each its own upstream account on one emulator), one
// at a time; each serves the warm-up reads, then (unless --no-mix) every cell of cache-hits.ts in
// its order (the 109 KB dossier in identity, gzip and br, then the bank record, at 16 and 64
// connections, 2 s each: the mixed traffic a deployment sees), then the measured target at 16
// connections for --rounds rounds of --seconds s; per round req/s, p99 and the process's CPU per
// HIT (/proc, all threads). A single-target bench (hit-ab.ts) measures a process that has only
// ever served one answer; cache-hits.ts measures one process per store for all its cells. This
// one says how far apart processes of one build land, and what the traffic before changes: it
// found the scheduler's placement of a gateway and wrk on a 2-core machine (11.9-14.2 µs a HIT by
// process; bench/cpu-pin.ts), and that a HIT's request log line costs as much alone (--no-mix) as
// after mixed traffic (issue 33, thirteenth pass, docs/performance.md). Pinned like the other HIT benches
// (cpu-pin.ts) unless --no-pin. Writes bench/results/hit-mixed.json.
//   node bin/run-ts.js bench/hit-mixed.ts [--processes 4] [--target bank|identity|gzip|br] [--log-level info|warn]
//        [--rounds 3] [--seconds 3] [--no-mix] [--no-pin]
// CPGW_BENCH_GATEWAY_NODE=<node binary>: the gateways run on that Node.
// Must never: leave a process running.
import { mkdir, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { chosenGatewayNode, cpuTicks, startCpgw, stopCpgw } from './cpgw-process.ts';
import { pinBench, pinningJson, pinningText, pinProcess } from './cpu-pin.ts';
import { HIT_CELLS, hitCell } from './hit-cells.ts';
import { writeBenchGatewayConfig } from './pass-through-rig.ts';
import { runWrk, wrkAvailable } from './wrk-load.ts';

const { values } = parseArgs({
  options: {
    processes: { type: 'string', default: '4' },
    target: { type: 'string', default: 'bank' },
    'log-level': { type: 'string', default: 'info' },
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '3' },
    'no-mix': { type: 'boolean', default: false },
    'no-pin': { type: 'boolean', default: false },
  },
});
const target = hitCell(values.target);
const PROCESSES = Number(values.processes);
const ROUNDS = Number(values.rounds);
const SECONDS = Number(values.seconds);
if (!target || !wrkAvailable() || !(PROCESSES >= 1) || !(ROUNDS >= 1) || !(SECONDS > 0)) {
  console.error(
    'usage (needs wrk): bench/hit-mixed.ts [--processes 4] [--target bank|identity|gzip|br] [--log-level info|warn] [--rounds 3] [--seconds 3] [--no-mix] [--no-pin]',
  );
  process.exit(2);
}

const loadAtStart = loadavg()[0]!;
const pinning = pinBench(!values['no-pin']);
const emu = await startCpgw(
  [
    'emulator',
    '--port',
    '0',
    ...Array.from({ length: PROCESSES }, (_, i) => [
      '--api-key',
      `hit-mixed-${i};name=g${i};account=${i + 1}`,
    ]).flat(),
  ],
  {},
  /http:\/\/127\.0\.0\.1:\d+/,
);
const { configFile, token } = await writeBenchGatewayConfig();
const auth = { authorization: `Bearer ${token}` };
interface RoundResult {
  req_per_s: number;
  p99_ms: number;
  cpu_us_per_hit: number;
}
const processes: Array<{ rounds: RoundResult[] }> = [];
try {
  for (let i = 0; i < PROCESSES; i++) {
    const gw = await startCpgw(
      ['start'],
      {
        CPGW_CONFIG: configFile,
        CPGW_PORT: '0',
        CPGW_UPSTREAM_URL: emu.match[0],
        CPGW_UPSTREAM_API_KEY: `hit-mixed-${i}`,
        CPGW_LOG_LEVEL: values['log-level'],
      },
      /listening on (http:\/\/[^\s)]+)/,
    );
    try {
      const url = gw.match[1]!;
      const pid = gw.child.process.pid!;
      if (pinning) pinProcess(pid, pinning.serverCpu);
      // Each answer in the cache (a MISS, then a HIT checked), as cache-hits.ts warms up.
      for (const cell of [HIT_CELLS.identity, HIT_CELLS.bank]) {
        for (let n = 0; n < 2; n++) {
          const res = await fetch(url + cell.path, { headers: auth });
          await res.arrayBuffer();
          if (res.status !== 200) throw new Error(`${cell.path}: ${res.status}`);
          if (n === 1 && res.headers.get('x-cache') !== 'HIT') throw new Error(`${cell.path}: no HIT`);
        }
      }
      if (!values['no-mix'])
        for (const connections of [16, 64])
          for (const cell of Object.values(HIT_CELLS))
            await runWrk(
              url + cell.path,
              { ...auth, 'accept-encoding': cell.acceptEncoding },
              connections,
              2,
            );
      const rounds: RoundResult[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        const before = cpuTicks(pid);
        const w = await runWrk(
          url + target.path,
          { ...auth, 'accept-encoding': target.acceptEncoding },
          16,
          SECONDS,
        );
        const after = cpuTicks(pid);
        if (w.non2xx || w.socket_errors)
          throw new Error(`${w.non2xx} non-2xx, ${w.socket_errors} socket errors`);
        rounds.push({
          req_per_s: Math.round(w.req_per_s),
          p99_ms: w.p99_ms,
          cpu_us_per_hit: Math.round(((after.all - before.all) * 10_000_000) / w.requests) / 1000,
        });
      }
      processes.push({ rounds });
      console.log(
        `process ${i + 1}/${PROCESSES}: ${rounds.map((r) => `${r.req_per_s} req/s ${r.cpu_us_per_hit} µs p99 ${r.p99_ms} ms`).join(' | ')}`,
      );
    } finally {
      await stopCpgw(gw.child);
    }
  }
} finally {
  await stopCpgw(emu.child);
}
const cpu = processes.flatMap((p) => p.rounds.map((r) => r.cpu_us_per_hit)).sort((a, b) => a - b);
console.log(
  `hit-mixed: ${values.target} HIT at 16 connections ${values['no-mix'] ? 'alone' : 'after the mixed cells'}, log level ${values['log-level']}, ${pinningText(pinning)}; CPU per HIT over every round of every process ${cpu[0]}-${cpu.at(-1)} µs, median ${cpu[Math.floor((cpu.length - 1) / 2)]}; load ${loadAtStart.toFixed(2)} -> ${loadavg()[0]!.toFixed(2)}`,
);
await mkdir('bench/results', { recursive: true });
await writeFile(
  'bench/results/hit-mixed.json',
  `${JSON.stringify(
    {
      bench: 'hit-mixed',
      at: new Date().toISOString(),
      node: process.version,
      gateway_node: chosenGatewayNode(),
      target: values.target,
      mixed_first: !values['no-mix'],
      log_level: values['log-level'],
      pinning: pinningJson(pinning),
      rounds: ROUNDS,
      seconds: SECONDS,
      loadavg_1m_at_start: loadAtStart,
      processes,
    },
    null,
    2,
  )}\n`,
);
console.log('written bench/results/hit-mixed.json');
