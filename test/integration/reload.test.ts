// Reload without restart, as an operator does it: the real `cpgw start` with a config file on
// disk, the emulator as upstream. SIGHUP after adding an app: the new token works at once, and a
// request in flight during the swap finishes normally on the config it started with. A bad file
// (POST /admin/reload or SIGHUP) is refused with every problem listed; the running config stays.
// Budgets and cache ages change live too.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newToken, tokenHash } from '../../src/auth/tokens.ts';
import { createEmulator, type Emulator } from '../../src/emulator/emulator-server.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { envWithoutCpgw, waitForOutput } from '../helpers/child-process.ts';
import { freePort } from '../helpers/redis.ts';

const UPSTREAM_KEY = 'reload-upstream-key-5d1e';
const tokens = { alpha: newToken(), beta: newToken(), admin: newToken() };
const dir = mkdtempSync(join(tmpdir(), 'cpgw-reload-'));
const file = join(dir, 'gateway.yaml');
let emulator: Emulator;
let child: ChildProcess;
let url: string;
let output = '';

function writeConfig(apps: string, extra = ''): void {
  writeFileSync(
    file,
    `# reload test\nadmin:\n  tokenHash: "${tokenHash(tokens.admin)}"\n${extra}apps:\n${apps}`,
  );
}
const app = (name: keyof typeof tokens, more = '') =>
  `  - name: ${name}\n    tokenHash: "${tokenHash(tokens[name])}"\n    scopes: [read:companies]\n${more}`;

const get = (token: string, path: string) =>
  fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } });
const adminReload = () =>
  fetch(`${url}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${tokens.admin}` } });

async function sighup(pattern: RegExp): Promise<void> {
  const seen = output.length;
  child.kill('SIGHUP');
  const deadline = Date.now() + 10_000;
  while (!pattern.test(output.slice(seen))) {
    if (Date.now() > deadline) throw new Error(`no ${pattern} after SIGHUP; got:\n${output.slice(seen)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

beforeAll(async () => {
  emulator = await createEmulator({ port: 0, apiKeys: [`${UPSTREAM_KEY};name=gateway`], logger: false });
  writeConfig(app('alpha'));
  const port = await freePort();
  child = spawn('node', ['bin/cpgw.js', 'start', '--config', file], {
    env: envWithoutCpgw({
      CPGW_UPSTREAM_URL: emulator.url,
      CPGW_UPSTREAM_API_KEY: UPSTREAM_KEY,
      CPGW_PORT: String(port),
      CPGW_STATE_DIR: join(dir, 'state'),
      CPGW_LOG_LEVEL: 'warn',
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  await waitForOutput(child, /listening on http/);
  url = `http://127.0.0.1:${port}`;
}, 30_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  await emulator?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('reload without restart', () => {
  it('SIGHUP after adding an app: its token works, a request in flight finishes on the old config', async () => {
    const [slow, other] = knownInns(2, 4100);
    expect((await get(tokens.beta, `/v1/companies/${other}`)).status).toBe(401);
    await fetch(`${emulator.url}/_emulator/faults`, {
      method: 'POST',
      headers: { authorization: `Bearer ${UPSTREAM_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ route: 'company', count: 1, latency_ms: 1500 }),
    });
    const inFlight = get(tokens.alpha, `/v1/companies/${slow}`);
    await new Promise((r) => setTimeout(r, 300));
    writeConfig(app('alpha') + app('beta'));
    await sighup(/configuration reloaded \(apps: alpha, beta\)/);
    expect((await get(tokens.beta, `/v1/companies/${other}`)).status).toBe(200);
    const slowAnswer = await inFlight;
    expect(slowAnswer.status).toBe(200);
    expect(await slowAnswer.text()).toContain(slow);
    expect(child.exitCode).toBeNull();
  });

  it('a bad file is refused with every problem listed, and the running config stays', async () => {
    writeConfig(`${app('alpha')}  - name: Bad Name\n    tokenHash: "sha256:nothex"\n`, 'unknownSection: 1\n');
    const res = await adminReload();
    expect(res.status).toBe(422);
    const body = (await res.json()) as {
      error: { code: string; details: { fields: Array<{ message: string }> } };
    };
    expect(body.error.code).toBe('validation_failed');
    const messages = body.error.details.fields.map((f) => f.message).join('\n');
    expect(messages).toMatch(/apps\.1\.name/);
    expect(messages).toMatch(/apps\.1\.tokenHash/);
    expect(messages).toMatch(/unknownSection/);
    await sighup(/reload refused, the running configuration stays/);
    // beta (from the last good config) still works; the process is still up.
    expect((await get(tokens.beta, `/v1/companies/${knownInns(1, 4200)[0]}`)).status).toBe(200);
    expect(child.exitCode).toBeNull();
  });

  it('POST /admin/reload applies removed apps, budgets and names settings that need a restart', async () => {
    writeConfig(
      app('alpha', '    budgets:\n      day:\n        limitMinor: 0\n'),
      'server:\n  bodyLimitBytes: 131072\n',
    );
    const res = await adminReload();
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      reloaded: true,
      apps: ['alpha'],
      restart_needed: ['server.bodyLimitBytes'],
    });
    expect((await get(tokens.beta, `/v1/companies/${knownInns(1, 4300)[0]}`)).status).toBe(401);
    const capped = await get(tokens.alpha, `/v1/companies/${knownInns(1, 4400)[0]}`);
    expect(capped.status).toBe(402);
    expect(((await capped.json()) as { error: { code: string } }).error.code).toBe('budget_exceeded');
  });
});
