// The spend replay (bench/spend-replay-lib.ts) through two gateway replicas on a real Redis.
// The replay moves the harness clocks (gateway and emulator) by hours; the Redis store's rate
// log runs on Redis server time, which does not move. Key limit 6 per 3 s here (the real one is
// 60 per minute): a trace of six companies an hour apart, each a paid section read (its window
// brings the dossier in: a second key call), a learned section 20 minutes later on the other
// replica (DERIVED, from the verdict the first replica learned) and the dossier (HIT).
//   - Replayed as fast as it goes, the Redis log sees 12 key calls in well under 3 s and the
//     replicas refuse with their own 429 (limit key): the failure the bench used to hit. The
//     memory store's log runs on the moved clock and refuses nothing.
//   - Held while the key log is nearly full (keyRoom), the Redis replay pays exactly what the
//     memory store pays, with the same answers, 0 refusals, 0 upstream 429s, and the gateway
//     ledger equal to the emulator's.
import { afterEach, describe, expect, it } from 'vitest';
import {
  gatewayLedgerTotal,
  keyRoomOf,
  pathOf,
  type ReplayOptions,
  type Run,
  replay,
  type TraceEvent,
} from '../../bench/spend-replay-lib.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import {
  type Harness,
  type HarnessOptions,
  type ReplicaHarness,
  startHarness,
  startRedisReplicas,
} from '../helpers/gateway-harness.ts';

const MINUTE = 60_000;
const KEY = { limit: 6, windowMs: 3_000 };
const options: HarnessOptions = {
  apps: [{ name: 'alpha' }, { name: 'beta' }],
  config: { limits: { key: { ...KEY, burst: KEY.limit, maxWaitMs: 200 } } },
};

const SECTIONS = ['founders', 'management', 'financials', 'taxes', 'arbitration', 'licenses'] as const;

/**
 * Company c: a paid read of SECTIONS[c] (its window brings the dossier in, which teaches that
 * section), founders 20 minutes later on the other replica (learned from company 0: DERIVED;
 * company 0's own founders is cached: HIT), the dossier (HIT).
 */
function trace(): TraceEvent[] {
  const events: TraceEvent[] = [];
  for (const [c, inn] of knownInns(6, 31_000).entries()) {
    const t = c * 60 * MINUTE;
    events.push(
      { at: t, app: 'alpha', inn, read: { kind: 'section', section: SECTIONS[c]! } },
      { at: t + 20 * MINUTE, app: 'beta', inn, read: { kind: 'section', section: 'founders' } },
      { at: t + 25 * MINUTE, app: 'alpha', inn, read: { kind: 'dossier' } },
    );
  }
  return events;
}
const ANSWERS = { '200 MISS': 6, '200 DERIVED': 5, '200 HIT': 7 };

/** Prefetches this gateway has finished one way or another. */
const prefetchesDone = async (url: string, adminToken: string) => {
  const res = await fetch(`${url}/admin/cache/stats`, { headers: { authorization: `Bearer ${adminToken}` } });
  const { prefetches: p } = (
    (await res.json()) as {
      sections_from_dossier: { prefetches: { fetched: number; skipped_saturated: number; failed: number } };
    }
  ).sections_from_dossier;
  return p.fetched + p.skipped_saturated + p.failed;
};

/**
 * Sends event i to gateway i % urls.length; after a charged section read, waits (real time, the
 * clocks still) until that gateway's dossier prefetch has landed, so the answers do not depend
 * on how fast the prefetch races the next event.
 */
function sender(h: Harness, urls: string[]) {
  return async (e: TraceEvent, i: number): Promise<Response> => {
    const url = urls[i % urls.length]!;
    const before = await prefetchesDone(url, h.adminToken);
    const res = await fetch(`${url}${pathOf(e)}`, {
      headers: { authorization: `Bearer ${h.tokens[e.app]}` },
    });
    if (e.read.kind === 'section' && res.status === 200 && Number(res.headers.get('x-charged-minor')) > 0) {
      for (let k = 0; k < 200 && (await prefetchesDone(url, h.adminToken)) === before; k++)
        await new Promise((r) => setTimeout(r, 10));
    }
    return res;
  };
}

async function memoryRun(withKeyRoom: boolean): Promise<Run> {
  const h = await startHarness(options);
  try {
    const replayOptions: ReplayOptions = withKeyRoom
      ? { keyRoom: keyRoomOf(h.gateway.url, h.adminToken) }
      : {};
    const run = await replay(h, trace(), sender(h, [h.gateway.url]), replayOptions);
    run.ledgerMatches = (await gatewayLedgerTotal(h.gateway.url, h.adminToken)) === run.spendMinor;
    return run;
  } finally {
    await h.close();
  }
}

let replicas: ReplicaHarness | null = null;
afterEach(async () => {
  await replicas?.close();
  replicas = null;
});

describe('spend replay in scaled time through two replicas on Redis', () => {
  it('replayed as fast as it goes, the Redis rate log (server time) fills and the replicas refuse; the memory log follows the clocks', async (ctx) => {
    replicas = await startRedisReplicas(options);
    if (!replicas) return ctx.skip();
    const { h, second } = replicas;
    const redis = await replay(h, trace(), sender(h, [h.gateway.url, second.url]));
    expect(redis.gateway429).toBeGreaterThan(0);
    expect(redis.upstream429).toBe(0);
    // Hours of trace time have passed on every clock the harness moves; not on Redis's.
    const limits = await (
      await fetch(`${h.gateway.url}/admin/limits`, { headers: { authorization: `Bearer ${h.adminToken}` } })
    ).json();
    const key = (limits as { classes: Array<{ name: string; used: number }> }).classes.find(
      (c) => c.name === 'key',
    );
    expect(key?.used).toBeGreaterThanOrEqual(KEY.limit - 1);

    const memory = await memoryRun(false);
    expect(memory.gateway429).toBe(0);
    expect(memory.answers).toEqual(ANSWERS);
  }, 60_000);

  it('held while the key log is nearly full, the Redis replay pays what the memory store pays: 0 refusals, ledger = emulator', async (ctx) => {
    replicas = await startRedisReplicas(options);
    if (!replicas) return ctx.skip();
    const { h, second } = replicas;
    const redis = await replay(h, trace(), sender(h, [h.gateway.url, second.url]), {
      keyRoom: keyRoomOf(h.gateway.url, h.adminToken),
      pollMs: 100,
    });
    redis.ledgerMatches = (await gatewayLedgerTotal(second.url, h.adminToken)) === redis.spendMinor;
    const memory = await memoryRun(true);

    expect(memory.pauses).toBe(0);
    expect(redis.pauses).toBeGreaterThan(0);
    expect(redis.gateway429).toBe(0);
    expect(redis.upstream429).toBe(0);
    expect(redis.ledgerMatches).toBe(true);
    expect(memory.ledgerMatches).toBe(true);
    // Six paid section reads; their windows brought the dossiers in (free); the rest derived or hit.
    expect(memory.spendMinor).toBe(6 * 9900);
    expect(redis.spendMinor).toBe(memory.spendMinor);
    expect(redis.charges).toBe(memory.charges);
    // Each replica reads /v1/me once at start; every other call is the same.
    expect(redis.upstreamCalls).toBe(memory.upstreamCalls + 1);
    expect(redis.answers).toEqual(ANSWERS);
    expect(memory.answers).toEqual(redis.answers);
  }, 90_000);
});
