// Drop-in, checked by Stoplight Prism (issue #18): Prism in proxy mode stands in front of the
// gateway with the gateway's own OpenAPI document (GET /v1/openapi.json) and validates every
// answer of the drop-in request set against it. Prism also flags the request set's deliberately
// invalid inputs (a short q, a bad INN): those are request violations, expected; every RESPONSE
// must conform: 0 violations.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestSet } from '../helpers/drop-in-requests.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';
import { freePort } from '../helpers/redis.ts';

const PRISM = join(import.meta.dirname, '../../node_modules/.bin/prism');

interface Violation {
  location: string[];
  severity: string;
  code: string | number;
  message: string;
}

describe('Prism proxy over the gateway', () => {
  let h: Harness;
  let prism: ChildProcess | null = null;
  let prismUrl = '';
  let dir = '';

  beforeAll(async () => {
    if (!existsSync(PRISM)) throw new Error('@stoplight/prism-cli is a devDependency: run npm ci');
    h = await startHarness({
      emulator: {
        checkSeconds: 0.05,
        checkWaitSeconds: 1,
        limits: { keyPerMinute: 600, searchPerMinute: 200 },
      },
    });
    dir = await mkdtemp(join(tmpdir(), 'cpgw-prism-'));
    const docPath = join(dir, 'gateway-openapi.json');
    await writeFile(docPath, await (await fetch(`${h.gateway.url}/v1/openapi.json`)).text());
    const port = await freePort();
    prismUrl = `http://127.0.0.1:${port}`;
    prism = spawn(PRISM, ['proxy', docPath, h.gateway.url, '-p', String(port), '-h', '127.0.0.1'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    await new Promise<void>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`prism did not start:\n${out}`)), 25_000);
      const onData = (d: Buffer) => {
        out += d.toString();
        if (out.includes('Prism is listening')) {
          clearTimeout(timer);
          resolve();
        }
      };
      prism!.stdout!.on('data', onData);
      prism!.stderr!.on('data', onData);
      prism!.once('exit', (code) => reject(new Error(`prism exited ${code}:\n${out}`)));
    });
  }, 60_000);

  afterAll(async () => {
    prism?.kill('SIGTERM');
    await h?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('every answer of the request set conforms to the gateway document: 0 response violations', async () => {
    const responseViolations: string[] = [];
    let requestViolations = 0;
    const probes = requestSet();
    for (const probe of probes) {
      const res = await fetch(`${prismUrl}${probe.path}`, {
        method: probe.method ?? 'GET',
        headers: { authorization: `Bearer ${h.tokens.alpha}`, ...probe.headers },
        body: probe.body === undefined ? undefined : JSON.stringify(probe.body),
      });
      await res.arrayBuffer();
      const header = res.headers.get('sl-violations');
      if (!header) continue;
      for (const v of JSON.parse(header) as Violation[]) {
        if (v.location[0] === 'response')
          responseViolations.push(`${probe.method ?? 'GET'} ${probe.path} → ${res.status}: ${v.message}`);
        else requestViolations++;
      }
    }
    expect(responseViolations).toEqual([]);
    // The set's invalid inputs were seen as such (the check is live, not a silent pass-through).
    expect(requestViolations).toBeGreaterThan(3);
  }, 60_000);
});
