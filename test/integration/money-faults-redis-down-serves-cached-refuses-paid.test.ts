// Issue #10, scenario "Redis down under load": a gateway on a private redis-server (never the
// shared one) serves eight concurrent clients while Redis is stopped for 8 s and started again,
// empty. Proves: while it is down, cached dossier reads, the bank and suggest reads and /v1/me
// answer 200 (the in-process cache tier; free calls on local rate shares); a paid read of a new
// company, which needs a budget decision, answers 503 store_unavailable in under 1 s; nothing
// answers 500; and paid reads work again within ~1 s of Redis answering.
//
// Why 8 s and not the 30 s: nothing in the gateway changes with the outage's length
// after its first 2 s. Redis reconnects back off 50, 100, ... ms up to RECONNECT_CAP_MS (400 ms),
// reached after 1.8 s; commands fail at once (no offline queue) from the first failure on; the
// cached answers live for hours; the rate governor's local shares are per window. An 8 s outage
// runs six seconds in that steady state, under load, and its recovery waits on the same capped
// reconnect delay a 30 s outage would.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore } from '../../src/store/create-store.ts';
import { RECONNECT_CAP_MS } from '../../src/store/redis/connection.ts';
import type { Store } from '../../src/store/store.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';
import { startPrivateRedis, uniquePrefix } from '../helpers/redis.ts';

/** MONEY_FAULTS_OUTAGE_MS=30000 runs the full 30 s (measured once; see the report). */
const OUTAGE_MS = Number(process.env.MONEY_FAULTS_OUTAGE_MS ?? 8000);
const CLIENTS = 8;
const BIC = '044525225';
const SUGGEST = '/v1/suggest?q=%D1%80%D0%BE%D0%BC';

const redis = await startPrivateRedis();
if (!redis) console.warn('\n!!! money-faults-redis-down: NO redis-server, SKIPPED !!!\n');
const maybe = redis ? describe : describe.skip;

interface Sample {
  kind: 'cached dossier' | 'bank' | 'suggest' | 'me' | 'paid';
  status: number;
  code: string | null;
  ms: number;
}

maybe('Redis down under load', () => {
  const prefix = uniquePrefix('redis-down');
  let store: Store | null = null;
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({
      apps: [{ name: 'alpha' }],
      config: { store: { stateDir: null, failoverWaitMs: 0 } },
      store: (clock) => {
        store = createStore({
          redisUrl: redis!.url,
          prefix,
          clock,
          cacheMaxBytes: 8 * 1024 * 1024,
          localCacheBytes: 64 * 1024 * 1024,
          onError: () => {},
        });
        return store;
      },
    });
  });
  afterAll(async () => {
    await h?.close();
    await redis?.stop();
  });

  const [cachedInn] = knownInns(1, 6000);
  let nextPaid = 6100;
  const paidPath = () => `/v1/companies/${knownInns(1, nextPaid++)[0]}`;

  async function one(kind: Sample['kind']): Promise<Sample> {
    const path = {
      'cached dossier': `/v1/companies/${cachedInn}`,
      bank: `/v1/banks/${BIC}`,
      suggest: SUGGEST,
      me: '/v1/me',
      paid: '',
    }[kind];
    const t0 = performance.now();
    const res = await h.call('alpha', kind === 'paid' ? paidPath() : path);
    const body = (await res.json()) as { error?: { code: string } };
    return { kind, status: res.status, code: body.error?.code ?? null, ms: performance.now() - t0 };
  }

  it(
    'cached and free reads 200, paid 503 store_unavailable fast, 0 500s, back within ~1 s',
    async () => {
      // Warm: each cached answer read once from the upstream (the dossier pays once).
      for (const kind of ['cached dossier', 'bank', 'suggest', 'me'] as const)
        expect((await one(kind)).status).toBe(200);
      expect((await one('paid')).status).toBe(200);

      await redis!.stop();
      const downAt = Date.now();
      const samples: Sample[] = [];
      const kinds = ['cached dossier', 'bank', 'suggest', 'me', 'paid'] as const;
      await Promise.all(
        Array.from({ length: CLIENTS }, async (_, c) => {
          for (let i = c; Date.now() - downAt < OUTAGE_MS; i++) {
            samples.push(await one(kinds[i % kinds.length]!));
            await new Promise((r) => setTimeout(r, 20));
          }
        }),
      );
      await redis!.start();
      const upAt = Date.now();
      // Recovery: a paid read of a new company answers 200 again.
      let recovery: Sample;
      for (;;) {
        recovery = await one('paid');
        if (recovery.status === 200) break;
        expect(recovery).toMatchObject({ status: 503, code: 'store_unavailable' });
        expect(Date.now() - upAt, 'paid reads never came back').toBeLessThan(5_000);
        await new Promise((r) => setTimeout(r, 20));
      }
      const backAfterMs = Date.now() - upAt;

      const by = (kind: Sample['kind']) => samples.filter((s) => s.kind === kind);
      const summary = Object.fromEntries(
        kinds.map((k) => [
          k,
          {
            n: by(k).length,
            statuses: [...new Set(by(k).map((s) => s.status))],
            maxMs: Math.round(Math.max(...by(k).map((s) => s.ms))),
          },
        ]),
      );
      console.info(
        `redis down ${OUTAGE_MS} ms under ${CLIENTS} clients: ${JSON.stringify(summary)}; ` +
          `paid reads back ${backAfterMs} ms after Redis answered (reconnect cap ${RECONNECT_CAP_MS} ms)`,
      );
      expect(samples.length).toBeGreaterThan(100);
      expect(samples.filter((s) => s.status === 500)).toEqual([]);
      for (const kind of ['cached dossier', 'bank', 'suggest', 'me'] as const) {
        expect(by(kind).length).toBeGreaterThan(10);
        expect(by(kind).filter((s) => s.status !== 200)).toEqual([]);
      }
      expect(by('paid').length).toBeGreaterThan(10);
      for (const s of by('paid')) {
        expect(s).toMatchObject({ status: 503, code: 'store_unavailable' });
        expect(s.ms).toBeLessThan(1000);
      }
      expect(backAfterMs).toBeLessThan(1500);
      // No paid read of the outage reached the upstream: the emulator charged the two warm-up reads
      // and the recovery read only.
      expect((await h.ledger()).totals.count).toBe(3);
    },
    OUTAGE_MS + 30_000,
  );
});
