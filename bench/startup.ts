// Benchmark: start-up time and memory of `cpgw start` (demo mode) from the compiled dist/ (what
// bin/cpgw.js and the image run) against the same sources through tsx (how production ran
// before dist/ existed), alternating the two so both see the same machine state. Start-up is
// spawn to the ready banner; RSS is read from /proc after the banner and after one /v1 read.
// Also times a one-shot command (`--version`). Prints medians, writes bench/results/startup.json.
// Run: node bin/run-ts.js bench/startup.ts [rounds=10]   (builds dist/ first when stale)
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { startCpgw, stopCpgw } from './cpgw-process.ts';

const ROUNDS = Number(process.argv[2] ?? 10);
// dist/ must be as new as src/, or the comparison is between two different programs.
if (spawnSync(process.execPath, ['bin/build.js', '--if-stale'], { stdio: 'inherit' }).status !== 0)
  process.exit(2);
const VARIANTS = {
  dist: { entry: 'bin/cpgw.js', args: [] as string[] },
  tsx: { entry: 'bin/run-ts.js', args: ['src/cli.ts'] },
};
type Variant = keyof typeof VARIANTS;

const rssMiB = (pid: number) => {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
  return Math.round((kb / 1024) * 10) / 10;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const samples = Object.fromEntries(
  Object.keys(VARIANTS).map((v) => [
    v,
    {
      startMs: [] as number[],
      rssReadyMiB: [] as number[],
      rssServedMiB: [] as number[],
      versionMs: [] as number[],
    },
  ]),
) as Record<
  Variant,
  { startMs: number[]; rssReadyMiB: number[]; rssServedMiB: number[]; versionMs: number[] }
>;

for (let round = 0; round < ROUNDS; round++) {
  for (const name of Object.keys(VARIANTS) as Variant[]) {
    const { entry, args } = VARIANTS[name];
    const s = samples[name];
    const t0 = performance.now();
    const { child, match } = await startCpgw(
      [...args, 'start'],
      { CPGW_PORT: '0', CPGW_LOG_LEVEL: 'warn' },
      /Demo app token \(shown once\): (\S+)[\s\S]*Ctrl-C stops/,
      entry,
    );
    s.startMs.push(performance.now() - t0);
    const pid = child.process.pid!;
    s.rssReadyMiB.push(rssMiB(pid));
    const url = /Gateway: (http:\/\/\S+)/.exec(child.tail())![1]!;
    const res = await fetch(`${url}/v1/companies/7707083893`, {
      headers: { authorization: `Bearer ${match[1]}` },
    });
    if (res.status !== 200) throw new Error(`${name}: /v1 answered ${res.status}`);
    await res.arrayBuffer();
    s.rssServedMiB.push(rssMiB(pid));
    await stopCpgw(child);
    const v0 = performance.now();
    const version = spawnSync(process.execPath, [entry, ...args, '--version'], { encoding: 'utf8' });
    if (version.status !== 0) throw new Error(`${name}: --version exited ${version.status}`);
    s.versionMs.push(performance.now() - v0);
  }
}

const summary = Object.fromEntries(
  Object.entries(samples).map(([name, s]) => [
    name,
    {
      start_ms_median: Math.round(median(s.startMs)),
      rss_ready_mib_median: median(s.rssReadyMiB),
      rss_after_one_read_mib_median: median(s.rssServedMiB),
      version_ms_median: Math.round(median(s.versionMs)),
    },
  ]),
);
console.table(summary);
writeFileSync(
  'bench/results/startup.json',
  `${JSON.stringify({ node: process.version, rounds: ROUNDS, ...summary }, null, 2)}\n`,
);
console.log('wrote bench/results/startup.json');
