// Is dist/ (the compiled CLI) usable, and is it as new as the sources beside it?
// Pure file-system reads (stat only); never builds and never writes anything.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Written by bin/build.js after tsc succeeded; its mtime is the build's time. */
export const STAMP = 'dist/.build-stamp';
const INPUTS = ['src', 'tsconfig.json', 'tsconfig.build.json'];

function newestMtime(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(`${path}/${entry}`));
  return newest;
}

/**
 * 'fresh': dist/ was built after the last change to src/ and the tsconfigs (or there is no src/,
 * as in a production install); 'stale': src/ changed since; 'missing': never built.
 * @param {URL} root the package root, ending in '/'
 */
export function distState(root) {
  const at = (p) => fileURLToPath(new URL(p, root));
  if (!existsSync(at('dist/cli.js'))) return 'missing';
  if (!existsSync(at('src'))) return 'fresh';
  const stamp = statSync(at(STAMP), { throwIfNoEntry: false });
  if (!stamp) return 'missing';
  const newest = Math.max(...INPUTS.map((p) => newestMtime(at(p))));
  return newest > stamp.mtimeMs ? 'stale' : 'fresh';
}
