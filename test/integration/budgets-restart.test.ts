// Budgets as data survive restarts (README "Budgets as data", issue 28): a budget set through
// PUT /admin/budgets and the audit trail live where money lives, so a restart, even a kill -9
// right after the PUT was answered, keeps them.
//
// 1. The embedded default (no Redis, no PostgreSQL: money and finance in <stateDir>/money.db),
//    with real `cpgw start` processes in front of a real `cpgw emulator`: a PUT lowers alpha's day
//    cap to one dossier; after a graceful restart GET /admin/budgets shows it (source admin,
//    version 1, who), GET /admin/audit lists its entry, and the cap is enforced (one dossier
//    passes, the next is refused 402 before the upstream). A second PUT (If-Match 1) raises it to
//    two dossiers, and the gateway is killed with SIGKILL as soon as the PUT is answered; after the
//    restart the override is at version 2, both audit entries are listed in order, and exactly one
//    more dossier passes.
// 2. Money on PostgreSQL (CPGW_POSTGRES_URL; a database created for this file): two replicas on
//    one database see one override, and it survives both being killed with SIGKILL.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Child, startCpgw, stopCpgw } from '../../bench/cpgw-process.ts';
import { newToken, tokenHash } from '../../src/auth/tokens.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { envWithoutCpgw, startEmulatorProcess } from '../helpers/child-process.ts';
import { UPSTREAM_KEY } from '../helpers/gateway-harness.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.ts';

const PRICE = 9900;
const DAY_CAP = 50_000;
const LISTENING = /listening on (http:\/\/[^\s)]+)/;

interface BudgetView {
  period: string;
  limit_minor: number | null;
  spent_minor: number;
  source: string;
  version: number;
  updated_by: string | null;
}
interface AuditView {
  entries: Array<{ id: string; actor: string; action: string; target: string; reason: string | null }>;
}

const pg: TestDatabase | null = await createTestDatabase('budgets_restart');

describe('budget overrides and the audit trail across restarts', () => {
  const token = newToken();
  const adminToken = newToken();
  const children: Child[] = [];
  let dir = '';
  let emuUrl = '';
  let config = '';
  // Distinct companies: each paid read is a new dossier (the emulator charges a company once per window).
  const inns = knownInns(12, 7100);
  let next = 0;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cpgw-budgets-restart-'));
    const emu = await startEmulatorProcess(UPSTREAM_KEY);
    children.push(emu.child);
    emuUrl = emu.url;
    config = join(dir, 'gateway.yaml');
    await writeFile(
      config,
      [
        'log:',
        '  level: warn',
        'admin:',
        `  tokenHash: "${tokenHash(adminToken)}"`,
        'apps:',
        '  - name: alpha',
        `    tokenHash: "${tokenHash(token)}"`,
        '    scopes: [read:companies]',
        `    budgets: { day: { limitMinor: ${DAY_CAP} } }`,
        '',
      ].join('\n'),
    );
  }, 30_000);

  afterAll(async () => {
    for (const child of children) await stopCpgw(child).catch(() => {});
    if (dir) await rm(dir, { recursive: true, force: true });
    await pg?.drop();
  });

  const start = async (env: Record<string, string>): Promise<{ child: Child; url: string }> => {
    const { child, match } = await startCpgw(['start'], env, LISTENING);
    children.push(child);
    return { child, url: match[1]! };
  };
  const kill9 = async (child: Child) => {
    const exited = new Promise((resolve) => child.process.once('exit', resolve));
    child.process.kill('SIGKILL');
    await exited;
  };
  const admin = (url: string, method: string, path: string, body?: unknown, ifMatch?: string) =>
    fetch(`${url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${adminToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(ifMatch ? { 'if-match': ifMatch } : {}),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const alphaDay = async (url: string): Promise<BudgetView> => {
    const body = (await (await admin(url, 'GET', '/admin/budgets')).json()) as {
      budgets: Record<string, BudgetView[]>;
    };
    return body.budgets.alpha!.find((b) => b.period === 'day')!;
  };
  const audit = async (url: string) =>
    ((await (await admin(url, 'GET', '/admin/audit?limit=1000')).json()) as AuditView).entries;
  /** A paid read of a company never read before; a 503 prices_unknown right after a start is retried. */
  const paidRead = async (url: string): Promise<{ status: number; code?: string }> => {
    const inn = inns[next++]!;
    for (let attempt = 0; ; attempt++) {
      const res = await fetch(`${url}/v1/companies/${inn}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      const code = ((await res.json()) as { error?: { code?: string } }).error?.code;
      if (res.status === 503 && code === 'prices_unknown' && attempt < 50) {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      return { status: res.status, ...(code ? { code } : {}) };
    }
  };
  const put = (url: string, limit: number, reason: string, ifMatch?: string) =>
    admin(url, 'PUT', '/admin/budgets/alpha/day', { limit_minor: limit, reason }, ifMatch);

  it('embedded default: an override and its audit entry survive a restart and a kill -9', async () => {
    const env = envWithoutCpgw({
      CPGW_CONFIG: config,
      CPGW_PORT: '0',
      CPGW_UPSTREAM_URL: emuUrl,
      CPGW_UPSTREAM_API_KEY: UPSTREAM_KEY,
      CPGW_STATE_DIR: join(dir, 'state'),
    });
    const first = await start(env);
    expect((await put(first.url, PRICE, 'freeze')).status).toBe(200);
    await stopCpgw(first.child);

    const second = await start(env);
    expect(await alphaDay(second.url)).toMatchObject({
      limit_minor: PRICE,
      source: 'admin',
      version: 1,
      updated_by: 'admin',
    });
    expect(await audit(second.url)).toMatchObject([
      { actor: 'admin', action: 'budget_set', target: 'budget:alpha:day', reason: 'freeze' },
    ]);
    // The cap in force after the restart: one dossier fits, the next is refused.
    expect(await paidRead(second.url)).toEqual({ status: 200 });
    expect(await paidRead(second.url)).toEqual({ status: 402, code: 'budget_exceeded' });

    // Raised, and the process killed the moment the answer arrived.
    const raised = await put(second.url, 2 * PRICE, 'one more', '1');
    expect(raised.status).toBe(200);
    await kill9(second.child);

    const third = await start(env);
    expect(await alphaDay(third.url)).toMatchObject({
      limit_minor: 2 * PRICE,
      spent_minor: PRICE,
      source: 'admin',
      version: 2,
    });
    const entries = await audit(third.url);
    expect(entries.map((e) => e.reason)).toEqual(['freeze', 'one more']);
    const ids = entries.map((e) => e.id.split('-').map(Number) as [number, number]);
    expect(ids[0]![0] < ids[1]![0] || (ids[0]![0] === ids[1]![0] && ids[0]![1] < ids[1]![1])).toBe(true);
    // A stale If-Match is refused against the stored version (2), as before the kill.
    expect((await put(third.url, 0, 'stale', '1')).status).toBe(412);
    expect(await paidRead(third.url)).toEqual({ status: 200 });
    expect(await paidRead(third.url)).toEqual({ status: 402, code: 'budget_exceeded' });
    await stopCpgw(third.child);
  }, 90_000);

  (pg ? it : it.skip)(
    'money on PostgreSQL: two replicas see one override, kept across kill -9',
    async () => {
      const env = (n: number) =>
        envWithoutCpgw({
          CPGW_CONFIG: config,
          CPGW_PORT: '0',
          CPGW_UPSTREAM_URL: emuUrl,
          CPGW_UPSTREAM_API_KEY: UPSTREAM_KEY,
          CPGW_POSTGRES_URL: pg!.url,
          CPGW_STATE_DIR: join(dir, `pg-state-${n}`),
        });
      const a = await start(env(1));
      const b = await start(env(2));
      expect((await put(a.url, PRICE, 'freeze')).status).toBe(200);
      // The other replica (no bus between them: no Redis) reads the same rows within its
      // settings-version memo (250 ms; BudgetOverrides): 1 s allowed.
      const since = Date.now();
      while ((await alphaDay(b.url)).version !== 1) {
        expect(Date.now() - since, 'replica B never saw the override').toBeLessThan(1000);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(await alphaDay(b.url)).toMatchObject({ limit_minor: PRICE, source: 'admin', version: 1 });
      expect((await audit(b.url)).map((e) => e.reason)).toEqual(['freeze']);
      // B's compare meets A's write: a stale version is refused.
      expect((await put(b.url, 0, 'stale', '0')).status).toBe(412);
      expect((await put(b.url, 2 * PRICE, 'one more', '1')).status).toBe(200);
      await Promise.all([kill9(a.child), kill9(b.child)]);

      const c = await start(env(1));
      expect(await alphaDay(c.url)).toMatchObject({ limit_minor: 2 * PRICE, source: 'admin', version: 2 });
      expect((await audit(c.url)).map((e) => e.reason)).toEqual(['freeze', 'one more']);
      expect(await paidRead(c.url)).toEqual({ status: 200 });
      expect(await paidRead(c.url)).toEqual({ status: 200 });
      expect(await paidRead(c.url)).toEqual({ status: 402, code: 'budget_exceeded' });
      await stopCpgw(c.child);
    },
    90_000,
  );
});
