// `npm run bench`: every benchmark in turn, each in its own process (so one's heap and timers
// never disturb the next), each writing bench/results/<name>.json. The rate-limit soak runs for
// about six minutes at the real limits, so it runs only with --soak.
// Run: npm run bench [-- --soak]
import { spawnSync } from 'node:child_process';

const QUICK = [
  'emulator-dossier',
  'cache-codec',
  'store-ops',
  'money-steps',
  'gateway-latency',
  'cache-hits',
  'limits-burst',
];
const benches = process.argv.includes('--soak') ? [...QUICK, 'limits-soak'] : QUICK;
const failed: string[] = [];
for (const [i, name] of benches.entries()) {
  console.log(`\n=== [${i + 1}/${benches.length}] bench/${name}.ts ===`);
  const started = Date.now();
  const run = spawnSync('node', ['bin/run-ts.js', `bench/${name}.ts`], { stdio: 'inherit' });
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  if (run.status !== 0) failed.push(name);
  console.log(
    `=== ${name}: ${run.status === 0 ? 'done' : `FAILED (exit ${run.status})`} in ${seconds} s ===`,
  );
}
console.log(
  failed.length ? `\nfailed: ${failed.join(', ')}` : '\nall benchmarks done; figures in bench/results/',
);
process.exit(failed.length ? 1 : 0);
