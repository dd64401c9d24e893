#!/usr/bin/env node
// `npm run build`: compiles src/ to dist/ with tsc (tsconfig.build.json, source maps on).
// Removes dist/ first so no file of a deleted source survives, and writes the build stamp only
// when tsc succeeded. Copies the console's static files (src/console/static/) beside the
// compiled module, which reads them at start. `--if-stale` (npm start, bench): builds only when
// dist/ is missing or older than src/, so an up-to-date start costs a few stat calls.
import { spawnSync } from 'node:child_process';
import { cpSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { distState, STAMP } from './dist-state.js';

const root = new URL('../', import.meta.url);
const at = (p) => fileURLToPath(new URL(p, root));

if (process.argv.includes('--if-stale') && distState(root) === 'fresh') process.exit(0);

let tsc;
try {
  const pkg = createRequire(import.meta.url).resolve('typescript/package.json');
  tsc = fileURLToPath(new URL('bin/tsc', pathToFileURL(pkg)));
} catch {
  console.error('cpgw build: typescript is not installed (a devDependency): run npm ci first');
  process.exit(2);
}
rmSync(at('dist'), { recursive: true, force: true });
const started = performance.now();
const run = spawnSync(process.execPath, [tsc, '-p', at('tsconfig.build.json')], { stdio: 'inherit' });
if (run.status !== 0) {
  console.error(`cpgw build: tsc failed (exit ${run.status ?? run.signal}); dist/ not written`);
  process.exit(2);
}
cpSync(at('src/console/static'), at('dist/console/static'), { recursive: true });
writeFileSync(at(STAMP), `${new Date().toISOString()}\n`);
console.error(`cpgw build: dist/ compiled in ${Math.round(performance.now() - started)} ms`);
