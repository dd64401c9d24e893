// Benchmark: a gateway's memory through many distinct INNs (issue 31 "memory that stays inside its
// limit"). The emulator (its rate limits lifted) and a gateway, each its own process; the gateway
// has default settings except its key/suggest limits (lifted to match the emulator's, so the run
// measures memory, not the rate queue) and, per case, store.cacheMaxBytes. N distinct valid INNs
// the emulator does not know (404, which the gateway caches as a negative answer) are read over a
// few keep-alive connections; the gateway's VmRSS (/proc/<pid>/status) is sampled every second.
// Prints peak and end RSS per case and writes bench/results/memory-inns.json.
//   node bin/run-ts.js bench/memory-inns.ts [N] [CONNECTIONS]
// Cases: the default cache bound (256 MiB) and a 16 MiB bound (CPGW_CACHE_MAX_BYTES), each also
// with V8's old space capped at 256 MiB (NODE_OPTIONS); --only=TEXT runs the cases named so.
// Must never: leave a process behind (every child is stopped, SIGKILL after 10 s).
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { completeInn } from '../src/domain/identifiers.ts';
import { isUnknownInn } from '../src/emulator/data/core.ts';
import { type Child, chosenGatewayNode, startCpgw, stopCpgw } from './cpgw-process.ts';
import { startLiftedEmulator, writeLiftedGatewayConfig } from './pass-through-rig.ts';

const args = process.argv.slice(2);
const [N = 120_000, CONNECTIONS = 8] = args.filter((a) => !a.startsWith('--')).map(Number);
/** --only=TEXT: run only the cases whose name contains TEXT (the others' results are kept). */
const ONLY = args.find((a) => a.startsWith('--only='))?.slice('--only='.length);
const UPSTREAM_KEY = 'bench-memory-key';

/** N distinct valid 10-digit INNs the emulator answers 404 for. */
function unknownInns(n: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n; i++) {
    const inn = completeInn(String(500000000 + i));
    if (isUnknownInn(inn)) out.push(inn);
  }
  return out;
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1]);
  return Math.round((kb / 1024) * 10) / 10;
}

interface CaseResult {
  case: string;
  cacheMaxBytes: number | 'default';
  nodeOptions: string | null;
  requests: number;
  statuses: Record<string, number>;
  seconds: number;
  rssReadyMiB: number;
  rssPeakMiB: number;
  rssEndMiB: number;
  /** RSS every 10 s (MiB). */
  rssEvery10s: number[];
}

async function runCase(
  name: string,
  cacheMaxBytes: number | null,
  nodeOptions: string | null,
  inns: string[],
): Promise<CaseResult> {
  const emu = await startLiftedEmulator([UPSTREAM_KEY]);
  let gw: Child | null = null;
  // The money file on tmpfs when there is one: its fsyncs would otherwise make a disk-bound run of
  // many minutes on a shared machine; RSS does not count it either way (SQLite reads, not mmap).
  const stateDir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'cpgw-bench-memory-'));
  try {
    const { configFile, token } = await writeLiftedGatewayConfig();
    const started = await startCpgw(
      ['start'],
      {
        CPGW_CONFIG: configFile,
        CPGW_PORT: '0',
        CPGW_UPSTREAM_URL: emu.url,
        CPGW_UPSTREAM_API_KEY: UPSTREAM_KEY,
        CPGW_LOG_REQUESTS: 'false',
        CPGW_STATE_DIR: stateDir,
        ...(cacheMaxBytes === null ? {} : { CPGW_CACHE_MAX_BYTES: String(cacheMaxBytes) }),
        ...(nodeOptions === null ? {} : { NODE_OPTIONS: nodeOptions }),
      },
      /listening on (http:\/\/[^\s)]+)/,
    );
    gw = started.child;
    const pid = gw.process.pid!;
    const url = started.match[1]!;
    const pool = new Pool(url, { connections: CONNECTIONS, pipelining: 1 });
    const samples: number[] = [];
    const rssReady = rssMiB(pid);
    let peak = rssReady;
    const sampler = setInterval(() => {
      const r = rssMiB(pid);
      samples.push(r);
      peak = Math.max(peak, r);
    }, 1000);
    const statuses: Record<string, number> = {};
    let next = 0;
    let done = 0;
    const t0 = performance.now();
    const worker = async () => {
      while (next < inns.length) {
        const inn = inns[next++]!;
        const res = await pool.request({
          method: 'GET',
          path: `/v1/companies/${inn}`,
          headers: { authorization: `Bearer ${token}` },
        });
        await res.body.arrayBuffer();
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
        done++;
        if (done % 10_000 === 0)
          console.error(
            `${name}: ${done} answered in ${Math.round((performance.now() - t0) / 1000)} s, RSS ${rssMiB(pid)} MiB`,
          );
      }
    };
    await Promise.all(Array.from({ length: CONNECTIONS * 2 }, worker));
    const seconds = Math.round((performance.now() - t0) / 100) / 10;
    // Let a collection settle what the run left (end = what the process keeps, not garbage).
    await new Promise((r) => setTimeout(r, 3000));
    clearInterval(sampler);
    const end = rssMiB(pid);
    peak = Math.max(peak, end);
    await pool.close();
    return {
      case: name,
      cacheMaxBytes: cacheMaxBytes ?? 'default',
      nodeOptions,
      requests: inns.length,
      statuses,
      seconds,
      rssReadyMiB: rssReady,
      rssPeakMiB: peak,
      rssEndMiB: end,
      rssEvery10s: samples.filter((_, i) => i % 10 === 9),
    };
  } finally {
    if (gw) await stopCpgw(gw);
    await stopCpgw(emu.child);
    rmSync(stateDir, { recursive: true, force: true });
  }
}

const inns = unknownInns(N);
const file = new URL('./results/memory-inns.json', import.meta.url);
const ran: CaseResult[] = [];
// The heap-capped cases: V8 sizes its heap from the machine's memory (or the container's limit),
// and on a big host lets garbage pile up long before it collects: RSS then says little about
// what the process keeps. A 256 MiB old space is what a 512 MiB container should give it.
const CAP = '--max-old-space-size=256';
for (const [name, bound, nodeOptions] of [
  ['default cache bound', null, null],
  ['16 MiB cache bound', 16 * 1024 * 1024, null],
  ['default cache bound, heap capped', null, CAP],
  ['16 MiB cache bound, heap capped', 16 * 1024 * 1024, CAP],
] as const) {
  if (ONLY !== undefined && !name.includes(ONLY)) continue;
  const r = await runCase(name, bound, nodeOptions, inns);
  ran.push(r);
  console.log(
    `${name}: ${r.requests} distinct INNs in ${r.seconds} s (${JSON.stringify(r.statuses)}); RSS ready ${r.rssReadyMiB} MiB, peak ${r.rssPeakMiB} MiB, end ${r.rssEndMiB} MiB`,
  );
}
await mkdir(new URL('./results/', import.meta.url), { recursive: true });
// The cases not run this time keep their last results.
const results: CaseResult[] = existsSync(file)
  ? (JSON.parse(readFileSync(file, 'utf8')) as { results: CaseResult[] }).results
  : [];
for (const r of ran) {
  const at = results.findIndex((x) => x.case === r.case);
  if (at >= 0) results[at] = r;
  else results.push(r);
}
await writeFile(
  file,
  `${JSON.stringify({ node: process.version, gatewayNode: chosenGatewayNode(), distinctInns: N, connections: CONNECTIONS, results }, null, 2)}\n`,
);
