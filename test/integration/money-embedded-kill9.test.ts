// Issue 28 item 2, "the embedded default, kill -9 mid-traffic and restart": one real `cpgw start`
// with no Redis (money in <stateDir>/money.db) in front of a real `cpgw emulator` process, a day
// cap of 50,000 (five dossiers at 9,900). Two paid reads complete; three more are in flight (the
// emulator holds them 3 s) when the gateway is killed with SIGKILL: no shutdown hook, no outbox.
// The upstream charges all five. Proves, with the emulator's ledger as the truth:
// - a second `cpgw start` on the same state directory, while the first runs, refuses with one
//   line naming the money file and the owner (exit 2);
// - after a restart on the same state directory, the gateway's ledger (/admin/ledger) and the
//   day's spend (/admin/budgets) equal what the emulator charged: the two recorded charges came
//   back from disk, the three in flight were pending on disk and the reconciler replayed them;
// - the cap holds across the restart: a paid read of a new company is refused 402 and never
//   reaches the upstream, while a read of a company charged before the kill is free (its window
//   came back from disk too; estimated at 9,900 it would have been refused as well).
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Child, startCpgw, stopCpgw } from '../../bench/cpgw-process.ts';
import { newToken, tokenHash } from '../../src/auth/tokens.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import type { AdminBudgets, AdminLedger, EmulatorLedger } from '../helpers/admin-views.ts';
import { envWithoutCpgw, startEmulatorProcess } from '../helpers/child-process.ts';
import { UPSTREAM_KEY } from '../helpers/gateway-harness.ts';

const PRICE = 9900;
const DAY_CAP = 50_000;
const LISTENING = /listening on (http:\/\/[^\s)]+)/;

describe('embedded money store: kill -9 mid-traffic, restart on the same state directory', () => {
  const token = newToken();
  const adminToken = newToken();
  const children: Child[] = [];
  let dir = '';
  let emuUrl = '';
  let env: Record<string, string> = {};

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cpgw-embedded-kill9-'));
    const emu = await startEmulatorProcess(UPSTREAM_KEY);
    children.push(emu.child);
    emuUrl = emu.url;
    const config = join(dir, 'gateway.yaml');
    // A short lease (the minimum, 1 s) and reconciler loop only to keep the test short.
    await writeFile(
      config,
      [
        'log:',
        '  level: warn',
        'cost:',
        '  leaseMs: 1000',
        '  reconcileIntervalMs: 300',
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
    env = envWithoutCpgw({
      CPGW_CONFIG: config,
      CPGW_PORT: '0',
      CPGW_UPSTREAM_URL: emuUrl,
      CPGW_UPSTREAM_API_KEY: UPSTREAM_KEY,
      CPGW_STATE_DIR: join(dir, 'state'),
    });
  }, 30_000);

  afterAll(async () => {
    for (const child of children) await stopCpgw(child).catch(() => {});
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const start = async (): Promise<{ child: Child; url: string }> => {
    const { child, match } = await startCpgw(['start'], env, LISTENING);
    children.push(child);
    return { child, url: match[1]! };
  };
  const emu = async <T>(path: string, body?: unknown): Promise<T> =>
    (await (
      await fetch(`${emuUrl}/_emulator${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${UPSTREAM_KEY}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
    ).json()) as T;
  const admin = async <T>(url: string, path: string): Promise<T> =>
    (await (
      await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${adminToken}` } })
    ).json()) as T;
  /** A paid read; a 503 prices_unknown right after a start (prices not read yet) is retried. */
  const read = async (
    url: string,
    inn: string,
  ): Promise<{ status: number; charged: string | null; code?: string }> => {
    for (let attempt = 0; ; attempt++) {
      const res = await fetch(`${url}/v1/companies/${inn}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      const body = (await res.json()) as { error?: { code?: string } };
      const code = body.error?.code;
      if (res.status === 503 && code === 'prices_unknown' && attempt < 50) {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      return { status: res.status, charged: res.headers.get('x-charged-minor'), ...(code ? { code } : {}) };
    }
  };
  const dayOf = (budgets: AdminBudgets) => budgets.budgets.alpha!.find((b) => b.period === 'day')!;

  it('keeps every charge and the day cap across a kill -9; a second owner is refused', async () => {
    const inns = knownInns(6, 5300);
    const first = await start();

    // (c) A second gateway on the same state directory refuses to start: one line, exit 2.
    const second = spawnSync(process.execPath, ['bin/cpgw.js', 'start'], {
      env,
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(second.status).toBe(2);
    const money = join(dir, 'state', 'money.db');
    expect(second.stderr).toMatch(
      new RegExp(
        `^cpgw start: cannot start: the money database ${money.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is in use by another cpgw process \\(pid ${first.child.process.pid} on [^)]+\\); stop it, or give this gateway its own store\\.stateDir \\(CPGW_STATE_DIR\\)\\n$`,
      ),
    );

    // Two paid reads complete and are recorded.
    for (const inn of inns.slice(0, 2))
      expect(await read(first.url, inn)).toEqual({ status: 200, charged: String(PRICE) });

    // Three more in flight (held 3 s upstream) when the gateway is killed.
    await emu('/faults', { route: 'company', latency_ms: 3000, count: 3 });
    const inFlight = inns.slice(2, 5).map((inn) =>
      fetch(`${first.url}/v1/companies/${inn}`, { headers: { authorization: `Bearer ${token}` } }).then(
        (res) => res.status,
        () => 'connection lost',
      ),
    );
    const startedAt = Date.now();
    for (;;) {
      const faults = await emu<{ faults: unknown[] }>('/faults');
      if (faults.faults.length === 0) break; // all three reached the upstream
      expect(Date.now() - startedAt, 'the reads never reached the upstream').toBeLessThan(10_000);
      await new Promise((r) => setTimeout(r, 20));
    }
    first.child.process.kill('SIGKILL');
    expect(await Promise.all(inFlight)).toEqual(['connection lost', 'connection lost', 'connection lost']);

    // Restart on the same state directory (the dead owner's lock is taken over).
    const again = await start();
    let view!: AdminLedger;
    let truth!: EmulatorLedger;
    for (const waitedFrom = Date.now(); ; ) {
      view = await admin<AdminLedger>(again.url, '/admin/ledger');
      truth = await emu<EmulatorLedger>('/ledger');
      if (truth.totals.count === 5 && view.pending.length === 0 && view.count === truth.totals.count) break;
      expect(Date.now() - waitedFrom, `books not equal: ${JSON.stringify({ view, truth })}`).toBeLessThan(
        20_000,
      );
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(truth.totals).toMatchObject({ count: 5, amount_minor: 5 * PRICE });
    expect(view.total_minor).toBe(truth.totals.amount_minor);
    expect(view.entries.map((e) => e.inn).sort()).toEqual(inns.slice(0, 5).sort());
    // The two completed before the kill came back from disk as they were; the three in flight
    // were replayed by the reconciler from their pending entries on disk.
    expect(
      view.entries
        .filter((e) => e.reconciled === true)
        .map((e) => e.inn)
        .sort(),
    ).toEqual(inns.slice(2, 5).sort());
    expect(view.outbox).toBe(0);
    const day = dayOf(await admin<AdminBudgets>(again.url, '/admin/budgets'));
    expect(day).toMatchObject({ spent_minor: truth.totals.amount_minor, reserved_minor: 0 });

    // The cap holds: 49,500 spent of 50,000, so a new company's dossier is refused before the upstream ...
    expect(await read(again.url, inns[5]!)).toMatchObject({ status: 402, code: 'budget_exceeded' });
    // ... while a company charged before the kill is inside its window: free, and allowed.
    expect(await read(again.url, inns[0]!)).toEqual({ status: 200, charged: '0' });
    const after = await emu<EmulatorLedger>('/ledger');
    expect(after.totals).toEqual(truth.totals);
    expect(dayOf(await admin<AdminBudgets>(again.url, '/admin/budgets')).spent_minor).toBe(5 * PRICE);
  }, 60_000);
});
