// RateGovernor on the memory store with a clock the test moves: exact window arithmetic,
// pauses in seconds, following X-RateLimit-*, which classes each route spends, per-app caps,
// weights, deadline refusals that come at once, and callers that leave the queue.

import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import {
  type Denial,
  type Permit,
  RateGovernor,
  type RateGovernorOptions,
} from '../../src/limits/rate-governor.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { type Store, StoreUnavailableError } from '../../src/store/store.ts';
import { simulatedTime } from '../helpers/simulated-time.ts';

const flush = async (times = 5) => {
  for (let i = 0; i < times; i++) await new Promise((r) => setImmediate(r));
};

/**
 * The governor's Clock: the manual clock's time, and sleeps that end only when the test moves the
 * clock past them (or the governor wakes them), one sleeper's end at a time.
 */
function manualTime(clock: ManualClock) {
  const { time, advance } = simulatedTime(clock);
  return { governorClock: time, advance };
}

let governors: RateGovernor[] = [];
afterEach(async () => {
  for (const g of governors) await g.close();
  governors = [];
});

function setup(options: Partial<RateGovernorOptions> = {}) {
  const clock = new ManualClock();
  const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
  const time = manualTime(clock);
  // Pacing and the edge margin off unless a test turns them on: these tests check the window itself.
  const noPacing = { burst: 1_000_000, edgeMarginMs: 0 };
  const classes = {
    key: { ...noPacing, ...options.classes?.key },
    search: { ...noPacing, ...options.classes?.search },
    suggest: { ...noPacing, ...options.classes?.suggest },
    check: { ...noPacing, ...options.classes?.check },
  };
  const governor = new RateGovernor({
    store,
    clock: time.governorClock,
    random: () => 0,
    ...options,
    classes,
  });
  governors.push(governor);
  return { clock, store, governor, advance: time.advance, governorClock: time.governorClock };
}

const used = async (g: RateGovernor) =>
  Object.fromEntries((await g.state()).classes.map((c) => [c.name, c.used])) as Record<string, number>;

function asPermit(r: Permit | Denial): Permit {
  if (!r.ok) throw new Error(`expected a permit, got ${JSON.stringify(r)}`);
  return r;
}

describe('window arithmetic (key: 60 per 60 s)', () => {
  it('grants N, refuses the N+1th at once with the exact time its slot frees, frees it after 60 s', async () => {
    const { clock, governor } = setup();
    const t0 = clock.now();
    asPermit(await governor.acquire({ app: 'crm', route: 'company', maxWaitMs: 0 }));
    clock.advance(1000);
    for (let i = 0; i < 59; i++)
      asPermit(await governor.acquire({ app: 'crm', route: 'company', maxWaitMs: 0 }));
    expect(await governor.acquire({ app: 'crm', route: 'company', maxWaitMs: 0 })).toEqual({
      ok: false,
      limit: 'key',
      retryAfterMs: 59_000,
      reason: 'deadline',
    });
    clock.set(t0 + 59_999);
    expect((await governor.acquire({ app: 'crm', route: 'me', maxWaitMs: 0 })).ok).toBe(false);
    clock.set(t0 + 60_000);
    asPermit(await governor.acquire({ app: 'crm', route: 'me', maxWaitMs: 0 }));
    expect(await governor.acquire({ app: 'crm', route: 'me', maxWaitMs: 0 })).toMatchObject({
      ok: false,
      retryAfterMs: 1000,
    });
  });

  it('a request that can start within its deadline waits exactly until its slot frees', async () => {
    const { clock, governor, advance } = setup({ classes: { check: { limit: 2 } } });
    const t0 = clock.now();
    asPermit(await governor.acquire({ app: 'crm', route: 'check_create' }));
    asPermit(await governor.acquire({ app: 'crm', route: 'check_create' }));
    const waiting = governor.acquire({ app: 'crm', route: 'check_create', maxWaitMs: 60_000 });
    await advance(60_000);
    const permit = asPermit(await waiting);
    expect(permit.waitedMs).toBe(60_000);
    expect(clock.now()).toBe(t0 + 60_000);
  });

  it('refuses at once when the queue position cannot start in time, not after waiting', async () => {
    const { clock, governor } = setup();
    asPermit(await governor.acquire({ app: 'crm', route: 'check_create' }));
    clock.advance(10_000);
    asPermit(await governor.acquire({ app: 'crm', route: 'check_create' }));
    // Slots free at +50 s and +60 s from now; a third waiter would need +110 s.
    const a = governor.acquire({ app: 'crm', route: 'check_create', maxWaitMs: 60_000 });
    const b = governor.acquire({ app: 'crm', route: 'check_create', maxWaitMs: 60_000 });
    await flush();
    const c = await governor.acquire({ app: 'crm', route: 'check_create', maxWaitMs: 60_000 });
    expect(c).toEqual({ ok: false, limit: 'check', retryAfterMs: 110_000, reason: 'deadline' });
    const s = await governor.state();
    expect(s.classes.find((x) => x.name === 'check')?.queued).toEqual({ crm: 2 });
    void a;
    void b;
  });
});

describe('pacing', () => {
  it('starts at most `burst` calls per burst * window / limit, so a saturated window keeps freeing', async () => {
    const { clock, governor, advance } = setup({ classes: { search: { limit: 20, burst: 2 } } });
    const t0 = clock.now();
    asPermit(await governor.acquire({ app: 'a', route: 'search', maxWaitMs: 0 }));
    asPermit(await governor.acquire({ app: 'a', route: 'search', maxWaitMs: 0 }));
    expect(await governor.acquire({ app: 'a', route: 'search', maxWaitMs: 0 })).toEqual({
      ok: false,
      limit: 'search',
      retryAfterMs: 6000,
      reason: 'deadline',
    });
    const starts: number[] = [];
    const all = Array.from({ length: 18 }, () =>
      governor
        .acquire({ app: 'a', route: 'search', maxWaitMs: 60_000 })
        .then((r) => r.ok && starts.push(clock.now() - t0)),
    );
    await advance(60_000);
    await Promise.all(all);
    expect(starts).toEqual([
      6000, 6000, 12_000, 12_000, 18_000, 18_000, 24_000, 24_000, 30_000, 30_000, 36_000, 36_000, 42_000,
      42_000, 48_000, 48_000, 54_000, 54_000,
    ]);
    // 20 starts in [t0, t0 + 54 s]: the whole allowance of one window, evenly spread.
    expect(starts.length + 2).toBe(20);
  });

  it('the defaults, one app alone: key and suggest start at once down to one batch, then pace; search 1 per 3 s; both cold checks together', async () => {
    const clock = new ManualClock();
    const g = new RateGovernor({ store: new MemoryStore({ clock, cacheMaxBytes: 1 << 20 }), clock });
    governors.push(g);
    asPermit(await g.acquire({ app: 'a', route: 'check_create', maxWaitMs: 0 }));
    asPermit(await g.acquire({ app: 'a', route: 'check_create', maxWaitMs: 0 }));
    // A start counts for the window and its edge margin (1 s of a minute).
    expect(await g.acquire({ app: 'a', route: 'check_create', maxWaitMs: 0 })).toMatchObject({
      ok: false,
      limit: 'check',
      retryAfterMs: 61_000,
    });
    asPermit(await g.acquire({ app: 'a', route: 'search', maxWaitMs: 0 }));
    expect(await g.acquire({ app: 'a', route: 'search', maxWaitMs: 0 })).toMatchObject({
      ok: false,
      limit: 'search',
      retryAfterMs: 3000,
    });
    // 3 key calls so far; 52 more start at once (60 less the reserve of one batch, 5).
    for (let i = 0; i < 52; i++) asPermit(await g.acquire({ app: 'a', route: 'me', maxWaitMs: 0 }));
    // The last 5 are paced: the 55 starts of this instant fill the pacing log (5 per 5 s).
    expect(await g.acquire({ app: 'a', route: 'me', maxWaitMs: 0 })).toEqual({
      ok: false,
      limit: 'key',
      retryAfterMs: 5000,
      reason: 'deadline',
    });
    for (let i = 0; i < 110; i++) asPermit(await g.acquire({ app: 'a', route: 'suggest', maxWaitMs: 0 }));
    expect(await g.acquire({ app: 'a', route: 'suggest', maxWaitMs: 0 })).toMatchObject({
      ok: false,
      limit: 'suggest',
      retryAfterMs: 5000,
    });
    clock.advance(5000);
    for (let i = 0; i < 5; i++) asPermit(await g.acquire({ app: 'a', route: 'me', maxWaitMs: 0 }));
    expect(await g.acquire({ app: 'a', route: 'me', maxWaitMs: 0 })).toMatchObject({
      ok: false,
      limit: 'key',
      retryAfterMs: 56_000,
    });
  });

  it('a start counts for the window plus its edge margin, so calls a window apart in the log are never closer upstream', async () => {
    const { clock, governor } = setup({ classes: { check: { limit: 2, edgeMarginMs: 250 } } });
    const t0 = clock.now();
    asPermit(await governor.acquire({ app: 'crm', route: 'check_create', maxWaitMs: 0 }));
    asPermit(await governor.acquire({ app: 'crm', route: 'check_create', maxWaitMs: 0 }));
    clock.set(t0 + 60_000);
    expect(await governor.acquire({ app: 'crm', route: 'check_create', maxWaitMs: 0 })).toEqual({
      ok: false,
      limit: 'check',
      retryAfterMs: 250,
      reason: 'deadline',
    });
    expect((await governor.headroom('crm')).check).toMatchObject({ remaining: 0, resetAtMs: t0 + 60_250 });
    clock.set(t0 + 60_250);
    asPermit(await governor.acquire({ app: 'crm', route: 'check_create', maxWaitMs: 0 }));
  });

  it('pacing engages while another app competes for the class, and not after a window without competition', async () => {
    const { clock, governor: g, advance } = setup({ classes: { key: { limit: 60, burst: 5 } } });
    const t0 = clock.now();
    const burst: Permit[] = [];
    for (let i = 0; i < 55; i++)
      burst.push(asPermit(await g.acquire({ app: 'a', route: 'me', maxWaitMs: 0 })));
    // b finds the class at its reserve and waits for the pacing log: it competes from now on.
    const b = g.acquire({ app: 'b', route: 'me', maxWaitMs: 10_000 });
    await advance(5000);
    expect(asPermit(await b).waitedMs).toBe(5000);
    // a gives most of its burst back: 25 + b's 1 in the window, 34 left; yet while b competes
    // (it waited within the window), a is paced: 5 starts per 5 s, b's one among them.
    for (const p of burst.slice(0, 30)) await p.release(false);
    for (let i = 0; i < 4; i++) asPermit(await g.acquire({ app: 'a', route: 'me', maxWaitMs: 0 }));
    expect(await g.acquire({ app: 'a', route: 'me', maxWaitMs: 0 })).toEqual({
      ok: false,
      limit: 'key',
      retryAfterMs: 5000,
      reason: 'deadline',
    });
    expect((await g.headroom('a')).key.remaining).toBe(0);
    expect((await g.state()).classes.find((c) => c.name === 'key')?.competingApps).toEqual(['a', 'b']);
    // One window after b last competed, a bursts again: 55 less the 5 still in the window.
    clock.set(t0 + 60_000 + 1);
    expect((await g.headroom('a')).key.remaining).toBe(50);
    for (let i = 0; i < 50; i++) asPermit(await g.acquire({ app: 'a', route: 'me', maxWaitMs: 0 }));
    expect((await g.acquire({ app: 'a', route: 'me', maxWaitMs: 0 })).ok).toBe(false);
  });

  it('a `reserve` of the whole limit paces every start; 0 lets one app use the whole window at once', async () => {
    const { governor: paced } = setup({ classes: { key: { limit: 10, burst: 2, reserve: 10 } } });
    asPermit(await paced.acquire({ app: 'a', route: 'me', maxWaitMs: 0 }));
    asPermit(await paced.acquire({ app: 'a', route: 'me', maxWaitMs: 0 }));
    expect(await paced.acquire({ app: 'a', route: 'me', maxWaitMs: 0 })).toMatchObject({
      ok: false,
      retryAfterMs: 12_000,
    });
    const { governor: open } = setup({ classes: { key: { limit: 10, burst: 2, reserve: 0 } } });
    for (let i = 0; i < 10; i++) asPermit(await open.acquire({ app: 'a', route: 'me', maxWaitMs: 0 }));
    expect(await open.acquire({ app: 'a', route: 'me', maxWaitMs: 0 })).toMatchObject({
      ok: false,
      retryAfterMs: 60_000,
    });
  });
});

describe('classes a route spends', () => {
  it('search spends search and key; suggest spends only suggest; check spends check and key; openapi nothing', async () => {
    const { governor } = setup();
    asPermit(await governor.acquire({ app: 'crm', route: 'search' }));
    expect(await used(governor)).toEqual({ key: 1, search: 1, suggest: 0, check: 0 });
    asPermit(await governor.acquire({ app: 'crm', route: 'suggest' }));
    expect(await used(governor)).toEqual({ key: 1, search: 1, suggest: 1, check: 0 });
    asPermit(await governor.acquire({ app: 'crm', route: 'check_create' }));
    expect(await used(governor)).toEqual({ key: 2, search: 1, suggest: 1, check: 1 });
    const free = asPermit(await governor.acquire({ app: 'crm', route: 'openapi' }));
    expect(free.classes).toEqual([]);
    expect(await used(governor)).toEqual({ key: 2, search: 1, suggest: 1, check: 1 });
  });

  it('a full key budget blocks search even with search slots left; release(false) gives slots back', async () => {
    const { governor } = setup({ classes: { key: { limit: 2 } } });
    asPermit(await governor.acquire({ app: 'crm', route: 'company' }));
    const p = asPermit(await governor.acquire({ app: 'crm', route: 'search' }));
    expect(await governor.acquire({ app: 'crm', route: 'search', maxWaitMs: 0 })).toMatchObject({
      ok: false,
      limit: 'key',
    });
    await p.release(false);
    expect(await used(governor)).toMatchObject({ key: 1, search: 0 });
    asPermit(await governor.acquire({ app: 'crm', route: 'search', maxWaitMs: 0 }));
  });

  it('cold checks: skip waits only for the other classes; refund gives back one class, keeps the key', async () => {
    const { governor } = setup({ classes: { check: { limit: 2, burst: 1 }, key: { limit: 10 } } });
    // Pacing 1 per 30 s: the second cold check cannot start now.
    asPermit(await governor.acquire({ app: 'crm', route: 'check_create', maxWaitMs: 0 }));
    expect(await governor.acquire({ app: 'crm', route: 'check_create', maxWaitMs: 0 })).toMatchObject({
      ok: false,
      limit: 'check',
    });
    // A check known not to be cold does not wait for the class, and spends only the key.
    const warm = asPermit(
      await governor.acquire({ app: 'crm', route: 'check_create', maxWaitMs: 0, skip: ['check'] }),
    );
    expect(warm.classes).toEqual(['key']);
    expect(await used(governor)).toMatchObject({ key: 2, check: 1 });
    // Another one is refunded once its answer shows it was not cold: its pacing slot frees too.
    const paced = setup({ classes: { check: { limit: 2, burst: 1 }, key: { limit: 10 } } }).governor;
    const first = asPermit(await paced.acquire({ app: 'crm', route: 'check_create', maxWaitMs: 0 }));
    await first.refund(['check']);
    await first.refund(['check']); // once only
    await first.release(true);
    expect(await used(paced)).toMatchObject({ key: 1, check: 0 });
    asPermit(await paced.acquire({ app: 'crm', route: 'check_create', maxWaitMs: 0 }));
    asPermit(await paced.acquire({ app: 'crm', route: 'check_create', maxWaitMs: 0, skip: ['check'] }));
    expect(await used(paced)).toMatchObject({ key: 3, check: 1 });
  });

  it('the default check wait plus the upstream 10 s check wait fits the client 30 s timeout', () => {
    const { governor } = setup({ classes: {} });
    expect(
      new RateGovernor({
        store: new MemoryStore({ clock: new ManualClock(), cacheMaxBytes: 1 << 20 }),
        clock: new ManualClock(),
      }).maxWaitFor('check_create') + 10_000,
    ).toBeLessThanOrEqual(25_000);
    expect(governor.maxWaitFor('check_create', undefined, ['check'])).toBe(10_000);
  });
});

describe('following the upstream', () => {
  it('429 with Retry-After: 7 pauses that class for 7000 ms, not 7 ms; other classes go on', async () => {
    const { clock, governor } = setup();
    await governor.observe('search', 429, { 'Retry-After': '7' }, 'rate_limited');
    expect(await governor.acquire({ app: 'crm', route: 'search', maxWaitMs: 0 })).toEqual({
      ok: false,
      limit: 'search',
      retryAfterMs: 7000,
      reason: 'paused',
    });
    asPermit(await governor.acquire({ app: 'crm', route: 'company', maxWaitMs: 0 }));
    clock.advance(6999);
    expect(await governor.acquire({ app: 'crm', route: 'search', maxWaitMs: 0 })).toMatchObject({
      ok: false,
      reason: 'paused',
    });
    clock.advance(1);
    asPermit(await governor.acquire({ app: 'crm', route: 'search', maxWaitMs: 0 }));
  });

  it('serves waiting callers when the pause ends', async () => {
    const { clock, governor, advance } = setup();
    const t0 = clock.now();
    await governor.observe('check_create', 429, { 'Retry-After': '7' });
    const waiting = governor.acquire({ app: 'crm', route: 'check_create', maxWaitMs: 10_000 });
    await advance(10_000);
    expect(asPermit(await waiting).waitedMs).toBe(7000);
    expect(clock.now()).toBeGreaterThanOrEqual(t0 + 7000);
  });

  it('a 429 quota_exceeded (tariff quota) pauses nothing', async () => {
    const { governor } = setup();
    await governor.observe('person', 429, { 'Retry-After': '60' }, 'quota_exceeded');
    asPermit(await governor.acquire({ app: 'crm', route: 'person', maxWaitMs: 0 }));
  });

  it('X-RateLimit-Remaining lowers the key allowance until X-RateLimit-Reset', async () => {
    const { clock, governor } = setup({ resetMarginMs: 1000 });
    const resetSec = Math.floor(clock.now() / 1000) + 30;
    await governor.observe('company', 200, {
      'X-RateLimit-Limit': '60',
      'X-RateLimit-Remaining': '3',
      'X-RateLimit-Reset': String(resetSec),
    });
    for (let i = 0; i < 3; i++)
      asPermit(await governor.acquire({ app: 'crm', route: 'company', maxWaitMs: 0 }));
    expect(await governor.acquire({ app: 'crm', route: 'company', maxWaitMs: 0 })).toEqual({
      ok: false,
      limit: 'key',
      retryAfterMs: 31_000,
      reason: 'deadline',
    });
    expect((await governor.state()).upstreamMinuteCap).toMatchObject({ limit: 3, used: 3 });
    clock.set(resetSec * 1000 + 1000);
    asPermit(await governor.acquire({ app: 'crm', route: 'company', maxWaitMs: 0 }));
  });

  it('X-RateLimit-Remaining: 0 pauses key until the reset; X-RateLimit-Limit changes N', async () => {
    const { clock, governor } = setup({ resetMarginMs: 0 });
    const reset = Math.floor(clock.now() / 1000) + 20;
    await governor.observe('me', 200, { 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': String(reset) });
    expect(await governor.acquire({ app: 'crm', route: 'me', maxWaitMs: 0 })).toMatchObject({
      ok: false,
      limit: 'key',
      reason: 'paused',
      retryAfterMs: reset * 1000 - clock.now(),
    });
    asPermit(await governor.acquire({ app: 'crm', route: 'suggest', maxWaitMs: 0 }));
    clock.set(reset * 1000);
    await governor.observe('me', 200, { 'X-RateLimit-Limit': '3' });
    for (let i = 0; i < 3; i++) asPermit(await governor.acquire({ app: 'crm', route: 'me', maxWaitMs: 0 }));
    expect(await governor.acquire({ app: 'crm', route: 'me', maxWaitMs: 0 })).toMatchObject({
      ok: false,
      limit: 'key',
    });
    expect((await governor.state()).classes.find((c) => c.name === 'key')).toMatchObject({
      limit: 3,
      configuredLimit: 60,
    });
  });
});

describe('a key limit set in config', () => {
  it('is a ceiling: X-RateLimit-Limit lowers it but never raises it', async () => {
    const { governor } = setup({ classes: { key: { limit: 4 } } });
    const keyLimit = async () => (await governor.state()).classes.find((c) => c.name === 'key')?.limit;
    await governor.observe('me', 200, { 'X-RateLimit-Limit': '1000' });
    expect(await keyLimit()).toBe(4);
    for (let i = 0; i < 4; i++) asPermit(await governor.acquire({ app: 'crm', route: 'me', maxWaitMs: 0 }));
    expect(await governor.acquire({ app: 'crm', route: 'me', maxWaitMs: 0 })).toMatchObject({ ok: false });
    await governor.observe('me', 200, { 'X-RateLimit-Limit': '2' });
    expect(await keyLimit()).toBe(2);
    await governor.observe('me', 200, { 'X-RateLimit-Limit': '90' });
    expect(await keyLimit()).toBe(4);
  });
});

describe('apps', () => {
  it('a per-app cap refuses that app (app_cap) and leaves the class to the others', async () => {
    const { governor } = setup({ apps: [{ name: 'crm', caps: { search: 2 } }] });
    asPermit(await governor.acquire({ app: 'crm', route: 'search' }));
    asPermit(await governor.acquire({ app: 'crm', route: 'search' }));
    expect(await governor.acquire({ app: 'crm', route: 'search', maxWaitMs: 5000 })).toMatchObject({
      ok: false,
      limit: 'search',
      reason: 'app_cap',
      retryAfterMs: 60_000,
    });
    asPermit(await governor.acquire({ app: 'billing', route: 'search', maxWaitMs: 0 }));
    const room = await governor.headroom('crm');
    expect(room.search).toMatchObject({ limit: 2, remaining: 0 });
    expect((await governor.headroom('billing')).search).toMatchObject({ limit: 20, remaining: 17 });
  });

  it('a saturated class is shared in proportion to weights', async () => {
    const { governor, advance } = setup({
      classes: { check: { limit: 2, windowMs: 1000 } },
      apps: [{ name: 'heavy', weight: 3 }, { name: 'light' }],
    });
    asPermit(await governor.acquire({ app: 'x', route: 'check_create' }));
    asPermit(await governor.acquire({ app: 'x', route: 'check_create' }));
    const order: string[] = [];
    const all: Promise<unknown>[] = [];
    for (let i = 0; i < 12; i++)
      for (const app of ['heavy', 'light'])
        all.push(
          governor
            .acquire({ app, route: 'check_create', maxWaitMs: 60_000 })
            .then((r) => r.ok && order.push(app)),
        );
    await advance(4000);
    expect(order).toHaveLength(8);
    expect(order.filter((a) => a === 'heavy')).toHaveLength(6);
    await governor.close();
    await Promise.all(all);
  });

  it('across replicas: an app over its share leaves the next free slot to an app waiting on another replica', async () => {
    // Every replica is configured with every app (that is how it knows whom to look for).
    const apps = [{ name: 'flood' }, { name: 'trickle' }];
    const {
      clock,
      store,
      governor: a,
      advance,
      governorClock,
    } = setup({ classes: { check: { limit: 4 } }, apps });
    const b = new RateGovernor({
      store,
      clock: governorClock,
      // This replica retries 50 ms after a slot frees, the flood's replica at once.
      random: () => 1,
      jitterMs: 50,
      pollMs: 100_000,
      apps,
      classes: { check: { limit: 4, burst: 1_000_000 }, key: { burst: 1_000_000 } },
    });
    governors.push(b);
    // The flood has used the window evenly: starts at +0, +15, +30, +45 s.
    for (let i = 0; i < 4; i++) {
      if (i > 0) clock.advance(15_000);
      asPermit(await a.acquire({ app: 'flood', route: 'check_create' }));
    }
    const order: string[] = [];
    // The flood queues first and retries first: without fair shares it would win every slot.
    const floods = Array.from({ length: 3 }, () =>
      a
        .acquire({ app: 'flood', route: 'check_create', maxWaitMs: 120_000 })
        .then((r) => r.ok && order.push('flood')),
    );
    await flush();
    const trickle = b.acquire({ app: 'trickle', route: 'check_create', maxWaitMs: 120_000 });
    void trickle.then((r) => r.ok && order.push('trickle'));
    await flush();
    clock.advance(200); // past the share refresh
    expect((await a.state()).classes.find((c) => c.name === 'check')?.waitingApps).toEqual([
      'flood',
      'trickle',
    ]);
    await advance(50_000);
    // Slots freed at +60, +75, +90 s: the trickle got the first; the flood the rest.
    expect(order).toEqual(['trickle', 'flood', 'flood']);
    await b.close();
    await a.close();
    await Promise.all(floods);
  });

  it('higher priority goes first', async () => {
    const { governor, advance } = setup({
      apps: [{ name: 'vip', priority: 1 }],
      classes: { check: { limit: 1 } },
    });
    asPermit(await governor.acquire({ app: 'a', route: 'check_create' }));
    const order: string[] = [];
    const low = governor
      .acquire({ app: 'a', route: 'check_create', maxWaitMs: 200_000 })
      .then((r) => r.ok && order.push('a'));
    await flush();
    const high = governor
      .acquire({ app: 'vip', route: 'check_create', maxWaitMs: 200_000 })
      .then((r) => r.ok && order.push('vip'));
    await advance(120_000);
    await Promise.all([low, high]);
    expect(order).toEqual(['vip', 'a']);
  });
});

describe('leaving the queue', () => {
  it('an aborted request leaves the queue at once and never takes a slot', async () => {
    const { governor, advance } = setup({ classes: { check: { limit: 1 } } });
    asPermit(await governor.acquire({ app: 'crm', route: 'check_create' }));
    const controller = new AbortController();
    const waiting = governor.acquire({
      app: 'crm',
      route: 'check_create',
      maxWaitMs: 120_000,
      signal: controller.signal,
    });
    await flush();
    expect((await governor.state()).apps.find((a) => a.name === 'crm')?.waiting).toBe(1);
    controller.abort();
    expect(await waiting).toMatchObject({ ok: false, reason: 'aborted' });
    expect((await governor.state()).apps.find((a) => a.name === 'crm')?.waiting).toBe(0);
    await advance(61_000);
    expect(await used(governor)).toMatchObject({ check: 0 });
  });

  it('a request no longer needed (another replica leads its call) leaves the queue at once', async () => {
    const { governor, advance } = setup({ classes: { check: { limit: 1 } } });
    asPermit(await governor.acquire({ app: 'crm', route: 'check_create' }));
    let settle!: (needed: boolean) => void;
    const needed = new Promise<boolean>((resolve) => {
      settle = resolve;
    });
    const waiting = governor.acquire({ app: 'crm', route: 'check_create', maxWaitMs: 120_000, needed });
    await flush();
    expect((await governor.state()).apps.find((a) => a.name === 'crm')?.waiting).toBe(1);
    settle(false);
    expect(await waiting).toMatchObject({ ok: false, reason: 'aborted' });
    expect((await governor.state()).apps.find((a) => a.name === 'crm')?.waiting).toBe(0);
    await advance(61_000);
    expect(await used(governor)).toMatchObject({ check: 0 });
    // Needed after all: it waits as any other request.
    const kept = governor.acquire({ app: 'crm', route: 'check_create', needed: Promise.resolve(true) });
    expect(await kept).toMatchObject({ ok: true });
  });

  it('an already aborted signal is refused without touching the store', async () => {
    const { governor } = setup();
    expect(await governor.acquire({ app: 'crm', route: 'me', signal: AbortSignal.abort() })).toMatchObject({
      ok: false,
      reason: 'aborted',
    });
    expect(await used(governor)).toMatchObject({ key: 0 });
  });

  it('a class with limit 0 is refused at once, whatever the deadline', async () => {
    const { governor } = setup({ classes: { check: { limit: 0 } } });
    expect(await governor.acquire({ app: 'crm', route: 'check_create', maxWaitMs: 120_000 })).toMatchObject({
      ok: false,
      reason: 'deadline',
    });
    const s = await governor.state();
    expect(s.apps.find((a) => a.name === 'crm')?.denied.deadline).toBe(1);
  });

  it('close() refuses whoever still waits', async () => {
    const { governor } = setup({ classes: { check: { limit: 1 } } });
    asPermit(await governor.acquire({ app: 'crm', route: 'check_create' }));
    const waiting = governor.acquire({ app: 'crm', route: 'check_create', maxWaitMs: 120_000 });
    await flush();
    await governor.close();
    expect(await waiting).toMatchObject({ ok: false, reason: 'shutdown' });
  });

  it('acquire() after close() is refused with reason shutdown, not thrown', async () => {
    const { governor } = setup();
    await governor.close();
    expect(await governor.acquire({ app: 'crm', route: 'company' })).toEqual({
      ok: false,
      limit: 'key',
      retryAfterMs: 0,
      reason: 'shutdown',
    });
    expect((await governor.state()).apps.find((a) => a.name === 'crm')?.denied.shutdown).toBe(1);
  });
});

describe('a Store that goes away', () => {
  it('waiting marks cleared or made while the Store is unreachable are cleared or made there once it answers', async () => {
    const clock = new ManualClock();
    const memory = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
    let up = true;
    const guard = <T>(f: () => Promise<T>): Promise<T> =>
      up ? f() : Promise.reject(new StoreUnavailableError('Redis connection: connect ECONNREFUSED'));
    const store: Pick<Store, 'takeSlots' | 'returnSlots' | 'pauseClass' | 'limiterState' | 'ping'> &
      Pick<Store, 'publish' | 'subscribe'> = {
      takeSlots: (specs, id) => guard(() => memory.takeSlots(specs, id)),
      returnSlots: (names, id) => guard(() => memory.returnSlots(names, id)),
      pauseClass: (name, ms) => guard(() => memory.pauseClass(name, ms)),
      limiterState: (specs) => guard(() => memory.limiterState(specs)),
      ping: () => guard(() => memory.ping()),
      publish: (channel, message) => memory.publish(channel, message),
      subscribe: (channel, listener) => memory.subscribe(channel, listener),
    };
    const time = manualTime(clock);
    const modes: boolean[] = [];
    const g = new RateGovernor({
      store,
      clock: time.governorClock,
      random: () => 0,
      classes: { check: { limit: 2, burst: 2, edgeMarginMs: 0 } },
      storeProbeMs: 250,
      onLocalMode: (local) => modes.push(local),
    });
    governors.push(g);
    const waitingOf = async (app: string) =>
      (await memory.limiterState([{ name: `check@${app}:waiting`, limit: 1e9, windowMs: 60_000 }]))[0]?.used;
    asPermit(await g.acquire({ app: 'a', route: 'check_create', maxWaitMs: 0 }));
    asPermit(await g.acquire({ app: 'a', route: 'check_create', maxWaitMs: 0 }));
    const leave = new AbortController();
    const b = g.acquire({ app: 'b', route: 'check_create', maxWaitMs: 60_000, signal: leave.signal });
    await flush();
    expect(await waitingOf('b')).toBe(1); // every replica can see that b waits
    up = false;
    leave.abort(); // b leaves while the Store is unreachable: its mark cannot be cleared there
    expect(await b).toMatchObject({ ok: false, reason: 'aborted' });
    await flush();
    expect(modes).toEqual([true]);
    expect(await waitingOf('b')).toBe(1);
    // c starts waiting meanwhile (its local share is taken by a's two slots): only here it knows.
    const c = g.acquire({ app: 'c', route: 'check_create', maxWaitMs: 120_000 });
    await flush();
    expect(await waitingOf('c')).toBe(0);
    up = true;
    await time.advance(250);
    expect(modes).toEqual([true, false]);
    expect(await waitingOf('b')).toBe(0);
    expect(await waitingOf('c')).toBe(1);
    await g.close();
    expect(await c).toMatchObject({ ok: false, reason: 'shutdown' });
    expect(await waitingOf('c')).toBe(0);
  });
});

describe('headroom', () => {
  it('reports limit, remaining and reset per class for the app', async () => {
    const { clock, governor } = setup();
    for (let i = 0; i < 3; i++) asPermit(await governor.acquire({ app: 'crm', route: 'company' }));
    const h = await governor.headroom('crm');
    expect(h.key).toEqual({
      limit: 60,
      remaining: 57,
      resetAtMs: clock.now() + 60_000,
      nextSlotAtMs: clock.now(),
    });
    expect(h.suggest).toEqual({
      limit: 120,
      remaining: 120,
      resetAtMs: clock.now(),
      nextSlotAtMs: clock.now(),
    });
    expect(await governor.headroomFor('crm', 'search')).toMatchObject({
      limitClass: 'search',
      remaining: 20,
    });
  });

  it("the upstream's minute cap lowers what remains, not the limit the app is told", async () => {
    const { clock, governor } = setup();
    const reset = Math.floor(clock.now() / 1000) + 30;
    await governor.observe('company', 200, {
      'X-RateLimit-Remaining': '2',
      'X-RateLimit-Reset': String(reset),
    });
    expect((await governor.headroom('crm')).key).toMatchObject({ limit: 60, remaining: 2 });
  });

  it('observe(..., app, permit) right after its take reads nothing: the take answered the minute log and the headroom', async () => {
    const { clock, reads, governor } = readCountingGovernor();
    const reset = Math.floor(clock.now() / 1000) + 30;
    const answer = (remaining: number) => ({
      'X-RateLimit-Remaining': String(remaining),
      'X-RateLimit-Reset': String(reset),
    });
    // The first answer of the minute sets the cap (its log was never taken: read).
    const first = asPermit(await governor.acquire({ app: 'crm', route: 'company' }));
    await governor.observe('company', 200, answer(10), undefined, 'crm', first);
    await first.release(true);
    expect(reads.flat()).toContain(`key~${reset * 1000}`);
    const cap0 = await governor.headroomFor('crm', 'company');
    reads.length = 0;

    // The next call takes the minute log too; its answer needs no read at all.
    const p = asPermit(await governor.acquire({ app: 'crm', route: 'company' }));
    await governor.observe('company', 200, answer(9), undefined, 'crm', p);
    await p.release(true);
    expect(reads).toEqual([]);
    const h = await governor.headroomFor('crm', 'company');
    expect(reads).toEqual([]);
    // 1 logged (this call) - 0 others in flight + 9 left: the cap stays at 10; one less remains.
    expect(h).toEqual({ ...(await governor.headroom('crm')).key, limitClass: 'key' });
    expect([cap0?.remaining, h?.remaining]).toEqual([10, 9]);

    // A call granted here meanwhile: what the take answered may miss it, so the logs are read.
    const q = asPermit(await governor.acquire({ app: 'crm', route: 'company' }));
    const other = asPermit(await governor.acquire({ app: 'crm', route: 'company' }));
    reads.length = 0;
    await governor.observe('company', 200, answer(8), undefined, 'crm', q);
    expect(reads).toHaveLength(1);
    // And so when the take is older than the headroom memo's bound.
    const r = asPermit(await governor.acquire({ app: 'crm', route: 'company' }));
    clock.advance(201);
    reads.length = 0;
    await governor.observe('company', 200, answer(6), undefined, 'crm', r);
    expect(reads).toHaveLength(1);
    for (const done of [q, other, r]) await done.release(true);
  });

  it("observe(..., app) reads the app's headroom with the minute log: the answer's X-RateLimit-* need no read of their own", async () => {
    const { clock, reads, governor } = readCountingGovernor();
    for (let i = 0; i < 3; i++) asPermit(await governor.acquire({ app: 'crm', route: 'company' }));
    const reset = Math.floor(clock.now() / 1000) + 30;
    const answer = { 'X-RateLimit-Remaining': '10', 'X-RateLimit-Reset': String(reset) };
    reads.length = 0;
    await governor.observe('company', 200, answer, undefined, 'crm');
    // One read: the minute log and the key's logs the headroom needs.
    expect(reads).toEqual([[`key~${reset * 1000}`, 'key', 'key:pace']]);
    const h = await governor.headroomFor('crm', 'company');
    expect(reads).toHaveLength(1);
    // The same as a fresh read: the cap is 0 logged - 2 other calls in flight + 10 left = 8.
    expect(h).toEqual({ ...(await governor.headroom('crm')).key, limitClass: 'key' });
    expect(h?.remaining).toBe(8);
    // Without the app (the price book's own refresh) nothing is kept for anyone.
    await governor.observe('company', 200, answer);
    reads.length = 0;
    await governor.headroomFor('crm', 'company');
    expect(reads).toHaveLength(1);
  });
});

/** A governor on a memory store that records the class names of every limiterState read. */
function readCountingGovernor(): { clock: ManualClock; reads: string[][]; governor: RateGovernor } {
  const clock = new ManualClock();
  const memory = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
  const reads: string[][] = [];
  const store = Object.create(memory) as Store;
  store.limiterState = (specs) => {
    reads.push(specs.map((s) => s.name));
    return memory.limiterState(specs);
  };
  const governor = new RateGovernor({ store, clock: manualTime(clock).governorClock, random: () => 0 });
  governors.push(governor);
  return { clock, reads, governor };
}
