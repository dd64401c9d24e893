// A production install, made the way the Dockerfile's runtime stage makes it (its COPY lines, its
// `npm ci --omit=dev`, its CMD, read from the Dockerfile itself), starts and serves with the whole
// file system read-only apart from its own state directory: the install's directory, TMPDIR,
// HOME, /tmp and /dev/shm are all read-only. The read-only view is a private mount namespace
// (`unshare --mount`, root only); a probe inside it must fail to write there before the gateway
// starts, so the test cannot pass on a writable tree. No devDependency (tsx, typescript, vitest)
// may be installed. Without unshare the test is skipped loudly (REQUIRE_SANDBOX=1, set by CI,
// turns that into a failure).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envWithoutCpgw, expectDemoServesAndStops, waitForOutput } from '../helpers/child-process.ts';
import { imageCommand } from '../helpers/image-command.ts';

const sandboxWorks =
  spawnSync('unshare', ['--mount', '--propagation', 'private', 'mount', '-o', 'remount,bind,ro', '/'], {
    stdio: 'ignore',
  }).status === 0;
if (!sandboxWorks) {
  const message =
    'production-install: unshare --mount is not permitted here; the read-only start is NOT tested';
  if (process.env.REQUIRE_SANDBOX === '1') throw new Error(message);
  console.warn(`\n!!! ${message} !!!\n`);
}

/** The runtime stage of the Dockerfile: what it copies, the npm ci it runs, the command it starts. */
interface RuntimeStage {
  copies: Array<{ from: string | null; sources: string[]; dest: string }>;
  install: string[];
  cmd: string[];
}

function runtimeStage(dockerfile: string): RuntimeStage {
  const lines = dockerfile.replace(/\\\n/g, ' ').split('\n');
  const lastFrom = lines.map((l) => /^FROM /.test(l)).lastIndexOf(true);
  const result: RuntimeStage = { copies: [], install: [], cmd: [] };
  for (const line of lines.slice(lastFrom)) {
    const copy = /^COPY\s+(--from=(\S+)\s+)?(.+)$/.exec(line);
    if (copy) {
      const parts = copy[3]!.trim().split(/\s+/);
      result.copies.push({ from: copy[2] ?? null, sources: parts.slice(0, -1), dest: parts.at(-1)! });
    }
    const run = /^RUN\s+(npm ci [^&]+)/.exec(line);
    if (run) result.install = run[1]!.trim().split(/\s+/);
  }
  result.cmd = imageCommand();
  return result;
}

describe.skipIf(!sandboxWorks)(
  'production install (npm ci --omit=dev + dist) on a read-only file system',
  () => {
    let work: string;
    let app: string;
    let stage: RuntimeStage;

    beforeAll(() => {
      work = mkdtempSync(join(tmpdir(), 'cpgw-prod-'));
      app = join(work, 'app');
      mkdirSync(app);
      stage = runtimeStage(readFileSync('Dockerfile', 'utf8'));
      // The build stage's `npm run build`, into a directory of this test (the checkout's dist/
      // may be in use by other tests).
      const built = join(work, 'build-dist');
      const tsc = spawnSync(
        process.execPath,
        ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json', '--outDir', built],
        { encoding: 'utf8' },
      );
      expect(tsc.status, tsc.stdout + tsc.stderr).toBe(0);
      for (const { from, sources, dest } of stage.copies) {
        const target = join(app, dest);
        for (const source of sources) {
          if (from === 'build') {
            expect(source).toMatch(/\/dist$/); // the one thing the build stage hands over
            cpSync(built, target, { recursive: true });
          } else {
            const to = dest.endsWith('/') ? join(target, basename(source)) : target;
            mkdirSync(dirname(to), { recursive: true });
            cpSync(source, to, { recursive: true });
          }
        }
      }
      expect(stage.install.slice(0, 3)).toEqual(['npm', 'ci', '--omit=dev']);
      // --prefer-offline: the packages come from the cache the checkout's own npm ci filled.
      const install = spawnSync(stage.install[0]!, [...stage.install.slice(1), '--prefer-offline'], {
        cwd: app,
        encoding: 'utf8',
      });
      expect(install.status, install.stderr).toBe(0);
    }, 180_000);

    afterAll(() => {
      if (work) rmSync(work, { recursive: true, force: true });
    });

    it('holds the runtime dependencies and the compiled output only', () => {
      expect(existsSync(join(app, 'dist/cli.js'))).toBe(true);
      expect(existsSync(join(app, 'dist/cli.js.map'))).toBe(true);
      expect(existsSync(join(app, 'src'))).toBe(false);
      for (const dep of ['fastify', 'undici', 'ioredis', 'node-sqlite3-wasm', 'pg'])
        expect(existsSync(join(app, 'node_modules', dep))).toBe(true);
      for (const dev of ['tsx', 'esbuild', 'typescript', 'vitest', '@biomejs/biome']) {
        expect(existsSync(join(app, 'node_modules', dev)), dev).toBe(false);
      }
    });

    it('starts, answers /healthz, /readyz and a paid /v1 route in demo mode, and stops cleanly', async () => {
      const state = join(work, 'state');
      const emptyTmp = join(work, 'tmp'); // exists and is empty, so tsx-style caches would try to mkdir in it
      const home = join(work, 'home');
      for (const dir of [state, emptyTmp, home]) mkdirSync(dir);
      // Everything read-only, then a private tmpfs for the state directory; the probes must fail
      // on every path except the state directory, or the sandbox is not what it claims.
      const script = [
        'set -e',
        'mount -o remount,bind,ro /',
        'if grep -q " /dev/shm " /proc/self/mounts; then mount -o remount,bind,ro /dev/shm; fi',
        'mount -t tmpfs -o size=16m,mode=0700 cpgw-state "$CPGW_STATE_DIR"',
        'for dir in "$PWD" "$PWD/node_modules" "$TMPDIR" "$HOME" /tmp /dev/shm; do',
        '  if touch "$dir/.cpgw-write-probe" 2>/dev/null; then echo "WRITABLE: $dir"; exit 97; fi',
        'done',
        'touch "$CPGW_STATE_DIR/.cpgw-write-probe" || { echo "state dir not writable"; exit 98; }',
        'echo "sandbox: read-only except $CPGW_STATE_DIR"',
        'exec "$@"',
      ].join('\n');
      const child: ChildProcess = spawn(
        'unshare',
        ['--mount', '--propagation', 'private', 'sh', '-c', script, 'sandbox', ...stage.cmd],
        {
          cwd: app,
          env: envWithoutCpgw({
            NODE_ENV: 'production',
            CPGW_STATE_DIR: state,
            CPGW_PORT: '0',
            CPGW_LOG_LEVEL: 'warn',
            TMPDIR: emptyTmp,
            HOME: home,
          }),
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      try {
        const out = await waitForOutput(child, /Ctrl-C stops/, 30_000);
        expect(out).toContain(`sandbox: read-only except ${state}`);
        await expectDemoServesAndStops(child, out, async (url) => {
          expect((await fetch(`${url}/healthz`)).status).toBe(200);
          expect((await fetch(`${url}/readyz`)).status).toBe(200);
        });
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
      }
    });
  },
);
