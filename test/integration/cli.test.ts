// The cpgw command as a user runs it: `cpgw start` in demo mode answers a real request and
// exits cleanly on SIGTERM; check-config reports every problem; token new prints a token
// and its hash line; an upstream key without apps refuses to start.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { tokenHash } from '../../src/auth/tokens.ts';

const CLI = ['bin/cpgw.js'];
const cleanEnv = () => {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('CPGW_')) delete env[k];
  return env;
};

function waitFor(child: ChildProcess, pattern: RegExp, timeoutMs = 20_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(
      () => reject(new Error(`timed out waiting for ${pattern}; got:\n${out}`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (pattern.test(out)) {
        clearTimeout(timer);
        resolve(out);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
  });
}

describe('cpgw', () => {
  it('start: demo mode prints a ready curl line, answers it, and exits 0 on SIGTERM', async () => {
    const child = spawn('node', [...CLI, 'start'], {
      env: { ...cleanEnv(), CPGW_PORT: '0', CPGW_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const out = await waitFor(child, /Ctrl-C stops/);
      expect(out).toContain('DEMO MODE');
      const token = /Demo app token \(shown once\): (\S+)/.exec(out)![1]!;
      const url = /Gateway: (http:\/\/\S+)/.exec(out)![1]!;
      const res = await fetch(`${url}/v1/companies/7707083893`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { company: { inn: string } }).company.inn).toBe('7707083893');
      const exited = new Promise<number | null>((r) => child.once('exit', r));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('start: refuses an upstream key with no apps configured, with a clear message', () => {
    const r = spawnSync('node', [...CLI, 'start'], {
      env: { ...cleanEnv(), CPGW_UPSTREAM_API_KEY: 'secret-upstream-key-123', CPGW_PORT: '0' },
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
});
