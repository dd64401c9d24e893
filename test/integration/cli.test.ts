// The cpgw command as a user runs it: `cpgw start` in demo mode answers a real request and
// exits cleanly on SIGTERM; check-config reports every problem; token new prints a token
// and its hash line; an upstream key without apps refuses to start; every subcommand answers
// --help with exit 0, --version prints the package's version, and every mistake is a short
// message on stderr with exit 2, never a stack trace.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tokenHash } from '../../src/auth/tokens.ts';
import { envWithoutCpgw, expectDemoServesAndStops, waitForOutput } from '../helpers/child-process.ts';

const CLI = ['bin/cpgw.js'];
const cleanEnv = () => envWithoutCpgw();
/** A gateway's own money file: no two tests (files run in parallel) share a state directory. */
const stateDirs: string[] = [];
const ownState = () => {
  stateDirs.push(mkdtempSync(join(tmpdir(), 'cpgw-cli-state-')));
  return { CPGW_STATE_DIR: stateDirs.at(-1)! };
};
afterAll(() => {
  for (const dir of stateDirs) rmSync(dir, { recursive: true, force: true });
});
const cpgw = (...args: string[]) =>
  spawnSync('node', [...CLI, ...args], { env: cleanEnv(), encoding: 'utf8', timeout: 20_000 });

/** A stack trace line, as Node prints one ("    at fn (file:line:col)"). */
const STACK = /^\s+at .+[:(]/m;

describe('cpgw', () => {
  it('start: demo mode prints a ready curl line, answers it, and exits 0 on SIGTERM', async () => {
    const child = spawn('node', [...CLI, 'start'], {
      env: { ...cleanEnv(), ...ownState(), CPGW_PORT: '0', CPGW_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const out = await waitForOutput(child, /Ctrl-C stops/);
      expect(out).toContain('DEMO MODE');
      await expectDemoServesAndStops(child, out);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('start: refuses an upstream key with no apps configured, with a clear message', () => {
    const r = spawnSync('node', [...CLI, 'start'], {
      env: { ...cleanEnv(), ...ownState(), CPGW_UPSTREAM_API_KEY: 'secret-upstream-key-123', CPGW_PORT: '0' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/no apps are configured/);
    expect(r.stderr + r.stdout).not.toContain('secret-upstream-key-123');
  });

  it('check-config: every problem at once, exit 2; a good file passes', () => {
    const bad = spawnSync(
      'node',
      [...CLI, 'check-config', '--config', 'test/fixtures/config/bad-many.yaml'],
      {
        env: cleanEnv(),
        encoding: 'utf8',
        timeout: 20_000,
      },
    );
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/invalid configuration \(\d+ problems\)/);
    expect(bad.stderr).toContain('apps.2.name');
    const good = spawnSync('node', [...CLI, 'check-config', '--config', 'config/gateway.example.yaml'], {
      env: cleanEnv(),
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(good.status).toBe(0);
    expect(good.stdout).toContain('configuration OK');
  });

  it('token new: prints the token once and the matching hash line', () => {
    const r = spawnSync('node', [...CLI, 'token', 'new', '--app', 'crm', '--scopes', 'read:companies'], {
      env: cleanEnv(),
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(r.status).toBe(0);
    const token = /\n {2}(cpgw_\S+)\n/.exec(r.stdout)![1]!;
    expect(r.stdout).toContain(`tokenHash: "${tokenHash(token)}"`);
    expect(r.stdout).toContain('scopes: [read:companies]');
    const bad = spawnSync('node', [...CLI, 'token', 'new', '--app', 'crm', '--scopes', 'read:all'], {
      env: cleanEnv(),
      encoding: 'utf8',
    });
    expect(bad.status).toBe(2);
  });

  it('token new --admin (or --app admin): the admin section, never "under apps:"', () => {
    for (const args of [['--admin'], ['--app', 'admin']]) {
      const r = spawnSync('node', [...CLI, 'token', 'new', ...args], { env: cleanEnv(), encoding: 'utf8' });
      expect(r.status).toBe(0);
      const token = /\n {2}(cpgw_\S+)\n/.exec(r.stdout)![1]!;
      expect(r.stdout).toContain(`admin:\n    tokenHash: "${tokenHash(token)}"`);
      expect(r.stdout).toContain(`CPGW_ADMIN_TOKEN_HASH=${tokenHash(token)}`);
      expect(r.stdout).not.toContain('paste under apps');
    }
  });

  it('--help on every subcommand: its own usage on stdout, exit 0', () => {
    const cases: Array<[string[], RegExp]> = [
      [['--help'], /usage: cpgw <command>/],
      [['-h'], /usage: cpgw <command>/],
      [['help'], /usage: cpgw <command>/],
      [['start', '--help'], /usage: cpgw start \[--config FILE\]/],
      [['start', '-h'], /usage: cpgw start/],
      [['help', 'start'], /usage: cpgw start/],
      [['emulator', '--help'], /usage: cpgw emulator/],
      [['help', 'emulator'], /usage: cpgw emulator/],
      [['token', '--help'], /usage: cpgw token new --app NAME/],
      [['token', 'new', '--help'], /usage: cpgw token new --app NAME/],
      [['check-config', '--help'], /usage: cpgw check-config/],
    ];
    for (const [args, usage] of cases) {
      const r = cpgw(...args);
      expect({ args, status: r.status, stderr: r.stderr }).toEqual({ args, status: 0, stderr: '' });
      expect(r.stdout).toMatch(usage);
    }
  });

  it('--version prints the version from package.json', () => {
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    for (const flag of ['--version', '-v', 'version']) {
      const r = cpgw(flag);
      expect(r.status).toBe(0);
      expect(r.stdout).toBe(`${version}\n`);
    }
  });

  it('mistakes: one line on stderr naming the problem, exit 2, no stack trace', () => {
    const cases: Array<[string[], RegExp]> = [
      [['frobnicate'], /^cpgw: unknown command "frobnicate" \(see cpgw --help\)$/],
      [['help', 'frobnicate'], /^cpgw: no such command "frobnicate"/],
      [['start', '--bogus'], /^cpgw start: Unknown option '--bogus'.*\(see cpgw start --help\)$/],
      [['start', 'extra'], /^cpgw start: Unexpected argument 'extra'/],
      [['emulator', '--bogus'], /^cpgw emulator: Unknown option '--bogus'.*\(see cpgw emulator --help\)$/],
      [['token'], /^cpgw token: missing subcommand; usage: cpgw token new/],
      [['token', 'old'], /^cpgw token: unknown subcommand "old"/],
      [['token', 'new'], /^cpgw token new: --app NAME is required/],
      [
        ['token', 'new', '--app', 'crm', '--scopes', 'read:all'],
        /^cpgw token new: unknown scope\(s\) read:all/,
      ],
      [['token', 'new', '--app'], /^cpgw token new: Option '--app <value>' argument missing/],
      [['check-config', '--nope'], /^cpgw check-config: Unknown option '--nope'/],
    ];
    for (const [args, message] of cases) {
      const r = cpgw(...args);
      expect({ args, status: r.status, stdout: r.stdout }).toEqual({ args, status: 2, stdout: '' });
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(r.stderr.trimEnd()).toMatch(message);
    }
    // A config file that cannot be read: the one line, then the problem list; no trace.
    const missing = cpgw('check-config', '--config', 'no/such/file.yaml');
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(
      /^cpgw check-config: invalid configuration \(1 problem\):\n {2}- no\/such\/file\.yaml: cannot read \(ENOENT\)\n$/,
    );
    // No command at all: the usage, on stderr, exit 2.
    const bare = cpgw();
    expect(bare.status).toBe(2);
    expect(bare.stderr).toMatch(/^usage: cpgw <command>/);
    for (const r of [missing, bare]) expect(r.stderr).not.toMatch(STACK);
  });

  it('a port already in use: one line naming it, exit 2 (start and emulator)', async () => {
    const holder = spawn('node', [...CLI, 'emulator', '--port', '0'], {
      env: cleanEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const port = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(
        await waitForOutput(holder, /listening on \S+:\d+ /),
      )![1]!;
      const emulator = cpgw('emulator', '--port', port);
      expect(emulator.status).toBe(2);
      expect(emulator.stderr).toBe(
        `cpgw emulator: listen EADDRINUSE: address already in use 127.0.0.1:${port}\n`,
      );
      const start = spawnSync('node', [...CLI, 'start'], {
        env: { ...cleanEnv(), ...ownState(), CPGW_PORT: port, CPGW_LOG_LEVEL: 'error' },
        encoding: 'utf8',
        timeout: 20_000,
      });
      expect(start.status).toBe(2);
      expect(start.stderr).toBe(
        `cpgw start: cannot start: listen EADDRINUSE: address already in use 127.0.0.1:${port}\n`,
      );
    } finally {
      holder.kill('SIGKILL');
    }
  });
});
