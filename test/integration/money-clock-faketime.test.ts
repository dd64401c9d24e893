// Issue 28 item 6, "one replica's clock 45 s ahead (libfaketime): no live call of another replica
// is replayed", with real processes: two `cpgw start` replicas share money on PostgreSQL (hot
// state on Redis under a prefix of this test) in front of a real `cpgw emulator`. Replica B runs
// under `faketime -f +45s`, so its own clock is 45 s ahead of A's (Redis is not under libfaketime:
// redis-server crashes under it; only the gateway process needs it). A paid dossier read of a new
// company through A is held 8 s by the emulator (a fault); the pending entry's lease is the
// default 10 s, renewed every third of it. By B's own clock that lease has lapsed at once.
// B's reconciler runs every 250 ms; A's every 60 s, so B is the replica whose reconciler works
// (one replica at a time holds the reconciler lock).
// - On the money store's clock (cost.moneyClock: store, the default): A answers 200, the emulator
//   saw exactly ONE call for the company (B replayed nothing), its ledger (the truth) equals the
//   gateway's (/admin/ledger): one charge; B's cpgw_clock_skew_seconds is 45 +- 2 s more than A's.
// - Control, each replica on its own clock (cost.moneyClock: local): B takes A's live charge over
//   and replays it: more than one call for the company, every one with the same Idempotency-Key,
//   and the upstream charges once.
// Fails (not skips) without faketime when REQUIRE_FAKETIME=1 (CI).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Child, startCpgw, stopCpgw } from '../../bench/cpgw-process.ts';
import { newToken, tokenHash } from '../../src/auth/tokens.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { envWithoutCpgw, startEmulatorProcess } from '../helpers/child-process.ts';
import { UPSTREAM_KEY } from '../helpers/gateway-harness.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { sumOf } from '../helpers/prom-text.ts';
import { deleteKeysUnder, freePort, startTestRedis, type TestRedis, uniquePrefix } from '../helpers/redis.ts';

const SKEW = '+45s';
const SKEW_SECONDS = 45;
const UPSTREAM_DELAY_MS = 8_000;
const PRICE = 9_900;
const LISTENING = /listening on (http:\/\/[^\s)]+)/;

interface AdminLedger {
  count: number;
  total_minor: number;
  entries: Array<{ inn: string; amount_minor: number; idempotency_key: string; reconciled?: boolean }>;
  pending: unknown[];
}
interface EmulatorLedger {
  entries: Array<{ inn: string; amount_minor: number; idempotency_key: string | null }>;
  totals: { count: number; amount_minor: number };
}
interface EmulatorRequests {
  requests: Array<{ path: string; status: number; idempotency_key?: string }>;
}

function faketimeWorks(): boolean {
  const run = spawnSync('faketime', ['-f', SKEW, process.execPath, '-p', 'Date.now()'], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  return run.status === 0 && Math.abs(Number(run.stdout) - Date.now() - SKEW_SECONDS * 1000) < 5_000;
}

const hasFaketime = faketimeWorks();
if (!hasFaketime && process.env.REQUIRE_FAKETIME === '1')
  throw new Error('REQUIRE_FAKETIME=1 but `faketime` (libfaketime) is missing or does not shift node');
if (!hasFaketime)
  console.warn('\n!!! NO faketime (libfaketime): the real-clock-skew replica test is SKIPPED !!!\n');

const redis = hasFaketime ? await startTestRedis() : null;
const maybe = redis ? describe : describe.skip;

/** A gateway replica; under faketime the child is faketime's process and `node` its child. */
interface Replica {
  child: Child;
  url: string;
  metricsUrl: string;
  /** The gateway's own pid (faketime forks it and does not pass signals on). */
  nodePid: number;
}

/** Ends a replica: SIGTERM to the gateway itself, SIGKILL after 10 s; resolves when all exited. */
async function stopReplica(r: Replica): Promise<void> {
  const p = r.child.process;
  if (p.pid === r.nodePid) return stopCpgw(r.child);
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise((resolve) => p.once('exit', resolve));
  const signal = (s: NodeJS.Signals) => {
    try {
      process.kill(r.nodePid, s);
    } catch {
      p.kill('SIGKILL'); // the gateway is gone: faketime alone is left
    }
  };
  signal('SIGTERM');
  const timer = setTimeout(() => signal('SIGKILL'), 10_000);
  // faketime exits with its child (and then removes its /dev/shm objects)
  await exited;
  clearTimeout(timer);
}

maybe('one replica 45 s ahead under libfaketime, money on PostgreSQL', () => {
  const token = newToken();
  const adminToken = newToken();
  let dir = '';
  let emulator!: Child;
  let emuUrl = '';
  let replicas: Replica[] = [];
  let db: TestDatabase | null = null;
  let prefix = '';

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cpgw-faketime-'));
    const emu = await startEmulatorProcess(UPSTREAM_KEY);
    emulator = emu.child;
    emuUrl = emu.url;
  }, 30_000);

  afterEach(async () => {
    await Promise.all(replicas.map((r) => stopReplica(r).catch(() => {})));
    replicas = [];
    if (prefix) await deleteKeysUnder((redis as TestRedis).url, [prefix]);
    prefix = '';
    await db?.drop();
    db = null;
  }, 30_000);

  afterAll(async () => {
    if (emulator) await stopCpgw(emulator).catch(() => {});
    await redis?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const emu = async <T>(path: string, body?: unknown): Promise<T> =>
    (await (
      await fetch(`${emuUrl}/_emulator${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${UPSTREAM_KEY}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
    ).json()) as T;
  const admin = async <T>(r: Replica, path: string): Promise<T> =>
    (await (
      await fetch(`${r.url}${path}`, { headers: { authorization: `Bearer ${adminToken}` } })
    ).json()) as T;
  const skewSeconds = async (r: Replica) =>
    sumOf(await (await fetch(r.metricsUrl)).text(), 'cpgw_clock_skew_seconds');

  /** A (own clock) and B (under faketime, 45 s ahead), sharing this mode's database and prefix. */
  async function twoReplicas(moneyClock: 'store' | 'local'): Promise<{ a: Replica; b: Replica }> {
    db = await createTestDatabase(`faketime_${moneyClock}`);
    if (!db) throw new Error('no PostgreSQL (createTestDatabase skipped)');
    prefix = uniquePrefix(`faketime-${moneyClock}`);
    await emu('/reset', {});
    const config = join(dir, `gateway-${moneyClock}.yaml`);
    await writeFile(
      config,
      [
        'log:',
        '  level: warn',
        'cost:',
        `  moneyClock: ${moneyClock}`,
        'admin:',
        `  tokenHash: "${tokenHash(adminToken)}"`,
        'apps:',
        '  - name: alpha',
        `    tokenHash: "${tokenHash(token)}"`,
        '    scopes: [read:companies]',
        '',
      ].join('\n'),
    );
    const start = async (name: 'a' | 'b'): Promise<Replica> => {
      const metricsPort = await freePort();
      const { child, match } = await startCpgw(
        ['start'],
        envWithoutCpgw({
          CPGW_CONFIG: config,
          CPGW_PORT: '0',
          CPGW_METRICS_PORT: String(metricsPort),
          CPGW_UPSTREAM_URL: emuUrl,
          CPGW_UPSTREAM_API_KEY: UPSTREAM_KEY,
          CPGW_REDIS_URL: (redis as TestRedis).url,
          CPGW_STORE_PREFIX: prefix,
          CPGW_POSTGRES_URL: db!.url,
          CPGW_STATE_DIR: join(dir, `state-${moneyClock}-${name}`),
          // B's reconciler looks every 250 ms; A's would first look after 60 s (after this test)
          CPGW_RECONCILE_INTERVAL_MS: name === 'b' ? '250' : '60000',
        }) as Record<string, string>,
        LISTENING,
        'bin/cpgw.js',
        name === 'b' ? ['faketime', '-f', SKEW] : [],
      );
      const pid = child.process.pid!;
      const nodePid =
        name === 'b'
          ? Number(readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/)[0])
          : pid;
      const replica = {
        child,
        url: match[1]!,
        metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
        nodePid,
      };
      replicas.push(replica);
      return replica;
    };
    const [a, b] = await Promise.all([start('a'), start('b')]);
    return { a, b };
  }

  /** A paid read of `inn` held 8 s upstream, through A; what the emulator and the books say after. */
  async function slowReadThroughA(a: Replica, inn: string) {
    await emu('/faults', { route: 'company', latency_ms: UPSTREAM_DELAY_MS, count: 1 });
    const startedAt = Date.now();
    let res: Response;
    for (let attempt = 0; ; attempt++) {
      res = await fetch(`${a.url}/v1/companies/${inn}`, { headers: { authorization: `Bearer ${token}` } });
      if (res.status !== 503 || attempt >= 50) break;
      // prices_unknown right after a start: refused before any upstream call; asked again
      await res.arrayBuffer();
      await new Promise((r) => setTimeout(r, 100));
    }
    await res.arrayBuffer();
    const tookMs = Date.now() - startedAt;
    // Settled: nothing pending any more, and the gateway's ledger has caught up with the truth.
    let view!: AdminLedger;
    let truth!: EmulatorLedger;
    for (const deadline = Date.now() + 15_000; ; ) {
      view = await admin<AdminLedger>(a, '/admin/ledger');
      truth = await emu<EmulatorLedger>('/ledger');
      if (view.pending.length === 0 && view.count === truth.totals.count) break;
      expect(Date.now(), 'books not settled within 15 s of the answer').toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 200));
    }
    const calls = (await emu<EmulatorRequests>('/requests?route=company')).requests.filter(
      (r) => r.path === `/v1/companies/${inn}`,
    );
    return { status: res.status, tookMs, calls, view, truth };
  }

  it("on the store's clock (default): B replays nothing of A's live call; skew B - A = 45 s", async () => {
    const { a, b } = await twoReplicas('store');
    const [skewA, skewB] = [await skewSeconds(a), await skewSeconds(b)];
    const [inn] = knownInns(1, 7300);
    const r = await slowReadThroughA(a, inn!);
    console.info(
      `faketime, store clock: skew A ${skewA.toFixed(3)} s, B ${skewB.toFixed(3)} s (B - A ${(skewB - skewA).toFixed(3)} s); ` +
        `A answered ${r.status} in ${r.tookMs} ms; upstream calls for the company: ${r.calls.length} ` +
        `(${r.calls.map((c) => c.status).join(', ')}); emulator ledger ${r.truth.totals.count} / ${r.truth.totals.amount_minor}, ` +
        `gateway ledger ${r.view.count} / ${r.view.total_minor}`,
    );
    expect(r.status).toBe(200);
    expect(r.tookMs).toBeGreaterThanOrEqual(UPSTREAM_DELAY_MS);
    // B's reconciler looked ~30 times while A's call ran: it replayed nothing.
    expect(r.calls.map((c) => c.status)).toEqual([200]);
    expect(r.calls[0]!.idempotency_key).toBe(r.truth.entries[0]?.idempotency_key);
    expect(r.truth.totals).toEqual(expect.objectContaining({ count: 1, amount_minor: PRICE }));
    expect(r.view.total_minor).toBe(r.truth.totals.amount_minor);
    expect(r.view.entries.map((e) => [e.inn, e.amount_minor, e.idempotency_key])).toEqual(
      r.truth.entries.map((e) => [e.inn, e.amount_minor, e.idempotency_key]),
    );
    expect(r.view.entries[0]!.reconciled).not.toBe(true);
    expect(skewB - skewA).toBeGreaterThan(SKEW_SECONDS - 2);
    expect(skewB - skewA).toBeLessThan(SKEW_SECONDS + 2);
  }, 40_000);

  it("control, each replica on its own clock (local): B replays A's live call; the upstream charges once", async () => {
    const { a } = await twoReplicas('local');
    const [inn] = knownInns(1, 7400);
    const r = await slowReadThroughA(a, inn!);
    console.info(
      `faketime, local clocks: A answered ${r.status} in ${r.tookMs} ms; upstream calls for the company: ` +
        `${r.calls.length} (${r.calls.map((c) => c.status).join(', ')}); ` +
        `keys: ${new Set(r.calls.map((c) => c.idempotency_key)).size} distinct; ` +
        `emulator ledger ${r.truth.totals.count} / ${r.truth.totals.amount_minor}, ` +
        `gateway ledger ${r.view.count} / ${r.view.total_minor}`,
    );
    expect(r.status).toBe(200);
    // B took A's live charge over and replayed it: more calls than A's one...
    expect(r.calls.length).toBeGreaterThan(1);
    // ...all under the same Idempotency-Key, so the upstream charged once.
    expect(new Set(r.calls.map((c) => c.idempotency_key))).toEqual(
      new Set([r.truth.entries[0]?.idempotency_key]),
    );
    expect(r.truth.totals).toEqual(expect.objectContaining({ count: 1, amount_minor: PRICE }));
  }, 40_000);
});
