#!/usr/bin/env node
// The `cpgw` command: runs the compiled CLI in dist/ with source maps on, so stack traces name
// the .ts lines. In a development checkout (src/ beside dist/) where dist/ is missing or older
// than src/, it runs the sources through tsx (a devDependency) instead, so an edit is never
// served stale. A production install (no src/) never loads tsx.
import { distState } from './dist-state.js';

const root = new URL('../', import.meta.url);
const state = distState(root);
if (state === 'fresh') {
  process.setSourceMapsEnabled(true);
  await import('../dist/cli.js');
} else {
  let register;
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch {
    console.error(`cpgw: dist/ is ${state} and tsx (a devDependency) is not installed: run npm run build`);
    process.exit(2);
  }
  register();
  await import('../src/cli.ts');
}
