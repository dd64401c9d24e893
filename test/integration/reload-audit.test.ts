// Config reloads land in the audit trail with the names of the keys that changed (never their
// values): POST /admin/reload under the named admin token that asked, SIGHUP (gateway.reload())
// as "SIGHUP". The gateway is the real one (startGateway, a config file on disk, the emulator
// as upstream); a finance token may not reload (403) and that leaves no entry.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newToken, tokenHash } from '../../src/auth/tokens.ts';
import { createEmulator, type Emulator } from '../../src/emulator/emulator-server.ts';
import { createLogger } from '../../src/logger.ts';
import { type RunningGateway, startGateway } from '../../src/main.ts';

const UPSTREAM_KEY = 'reload-audit-upstream-key-77ab';
const tokens = { crm: newToken(), ops: newToken(), fin: newToken() };
const dir = mkdtempSync(join(tmpdir(), 'cpgw-reload-audit-'));
const file = join(dir, 'gateway.yaml');

function writeConfig(dayCap: number, extraApp = ''): void {
  writeFileSync(
    file,
    `admin:
  tokens:
    - name: ops
      role: admin
      tokenHash: "${tokenHash(tokens.ops)}"
    - name: fin
      role: finance
      tokenHash: "${tokenHash(tokens.fin)}"
apps:
  - name: crm
    tokenHash: "${tokenHash(tokens.crm)}"
    budgets:
      day: { limitMinor: ${dayCap} }
${extraApp}`,
  );
}

describe('reloads in the audit trail', () => {
  let emulator: Emulator;
  let gw: RunningGateway;
  beforeAll(async () => {
    emulator = await createEmulator({ port: 0, apiKeys: [`${UPSTREAM_KEY};name=gateway`], logger: false });
    writeConfig(1000);
    gw = await startGateway({
      configFiles: [file],
      env: {
        CPGW_PORT: '0',
        CPGW_UPSTREAM_URL: emulator.url,
        CPGW_UPSTREAM_API_KEY: UPSTREAM_KEY,
        CPGW_STATE_DIR: join(dir, 'state'),
      },
      logger: createLogger('silent'),
    });
  });
  afterAll(async () => {
    await gw?.close();
    await emulator?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const as = (token: string, method: string, path: string) =>
    fetch(`${gw.url}${path}`, { method, headers: { authorization: `Bearer ${token}` } });
  const reloads = async () => {
    const res = await as(tokens.fin, 'GET', '/admin/audit?action=reload');
    return ((await res.json()) as { entries: Array<Record<string, unknown>> }).entries;
  };

  it('POST /admin/reload by a named admin: actor, role and the changed keys', async () => {
    expect((await as(tokens.fin, 'POST', '/admin/reload')).status).toBe(403);
    expect(await reloads()).toEqual([]);
    writeConfig(2000);
    const res = await as(tokens.ops, 'POST', '/admin/reload');
    expect(res.status).toBe(200);
    const [entry] = await reloads();
    expect(entry).toMatchObject({
      actor: 'ops',
      role: 'admin',
      target: 'config',
      request_id: res.headers.get('x-request-id'),
      after: { changed_keys: ['apps.crm.budgets.day.limitMinor'] },
    });
    expect(JSON.stringify(entry)).not.toContain('2000');
  });

  it('SIGHUP (gateway.reload()): recorded as "SIGHUP" with the changed keys', async () => {
    writeConfig(2000, `  - name: beta\n    tokenHash: "${tokenHash(newToken())}"\n`);
    gw.reload();
    let entries: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 50 && entries.length < 2; i++) {
      entries = await reloads();
      if (entries.length < 2) await new Promise((r) => setTimeout(r, 20));
    }
    expect(entries[1]).toMatchObject({
      actor: 'SIGHUP',
      role: 'admin',
      after: { changed_keys: ['apps.beta'] },
    });
  });
});
