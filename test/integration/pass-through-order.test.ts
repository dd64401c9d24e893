// What a pass-through (Cache-Control: no-cache) waits for before its answer, over real HTTP
// (docs/performance.md "Pass-through"): a free read (bank record, suggest, a dossier inside its
// window) is answered before its cache entry is written, and the entry is there right after; so
// is a charged read whose window covers its re-read (a new dossier: a read right after it goes
// upstream inside that window and pays nothing); a charged read no window covers again (a
// person) is answered only once its entry is stored, so a read right after it never pays again.
// The store's cacheSet is held back by the test to tell the orders apart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore } from '../../src/store/create-store.ts';
import type { Store } from '../../src/store/store.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

let h: Harness;
const held: string[] = [];
let release: () => void = () => {};
let gate: Promise<void> = Promise.resolve();

/** From now on cacheSet waits until release() is called. */
function holdWrites(): void {
  gate = new Promise<void>((resolve) => {
    release = resolve;
  });
}

beforeAll(async () => {
  h = await startHarness({
    config: { cache: { prefetchDossier: false } },
    store: (clock) => {
      const store = createStore({ clock, cacheMaxBytes: 64 << 20 });
      const slow = Object.create(store) as Store;
      slow.cacheSet = async (key, value, options) => {
        held.push(key);
        await gate;
        return store.cacheSet(key, value, options);
      };
      return slow;
    },
  });
});
afterAll(async () => {
  release();
  await h.close();
});

/** Resolves with the answer, or with 'pending' when none came within ms. */
async function within(ms: number, answer: Promise<Response>): Promise<Response | 'pending'> {
  const timer = new Promise<'pending'>((resolve) => setTimeout(() => resolve('pending'), ms));
  return Promise.race([answer, timer]);
}

describe('pass-through: what the answer waits for', () => {
  it('a free read is answered before its cache entry is written, and the entry follows', async () => {
    holdWrites();
    held.length = 0;
    const res = await within(
      2_000,
      h.call('alpha', '/v1/banks/044525225', { headers: { 'cache-control': 'no-cache' } }),
    );
    expect(res).not.toBe('pending');
    expect((res as Response).status).toBe(200);
    expect((res as Response).headers.get('x-cache')).toBe('MISS');
    await (res as Response).text();
    // Written after the answer (the write is held here: the answer did not wait for it).
    await expect.poll(() => held).toEqual(['bank:044525225']);
    release();
    const again = await h.call('alpha', '/v1/banks/044525225');
    expect(again.headers.get('x-cache')).toBe('HIT');
  });

  it('a charged read no window covers again (a person) is answered only once its entry is stored', async () => {
    holdWrites();
    held.length = 0;
    const pending = h.call('alpha', '/v1/persons/500100732259', { headers: { 'cache-control': 'no-cache' } });
    expect(await within(500, pending)).toBe('pending');
    expect(held.some((k) => k.includes('500100732259'))).toBe(true);
    release();
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.headers.get('x-cache')).toBe('MISS');
    expect(Number(res.headers.get('x-charged-minor'))).toBeGreaterThan(0);
    await res.text();
    // Stored before the answer: the next read is a HIT, not a second charge.
    const again = await h.call('beta', '/v1/persons/500100732259');
    expect(again.headers.get('x-cache')).toBe('HIT');
    expect(again.headers.get('x-charged-minor')).toBe('0');
  });

  it('a charged read whose window covers its re-read is answered before its entry is written; a read right after pays nothing', async () => {
    const inn = knownInns(1)[0]!;
    const upstreamBefore = await h.upstreamCount();
    holdWrites();
    held.length = 0;
    const res = await within(
      2_000,
      h.call('alpha', `/v1/companies/${inn}`, { headers: { 'cache-control': 'no-cache' } }),
    );
    expect(res).not.toBe('pending');
    expect((res as Response).status).toBe(200);
    expect((res as Response).headers.get('x-cache')).toBe('MISS');
    expect(Number((res as Response).headers.get('x-charged-minor'))).toBeGreaterThan(0);
    expect((res as Response).headers.get('x-window-expires')).not.toBeNull();
    await (res as Response).text();
    await expect.poll(() => held.some((k) => k.includes(inn))).toBe(true);

    // The entry is not stored yet (its write is held): a read right after, by another app, goes
    // upstream inside the window the first one opened, and pays nothing.
    const right = await within(2_000, h.call('beta', `/v1/companies/${inn}`));
    expect(right).not.toBe('pending');
    expect((right as Response).status).toBe(200);
    expect((right as Response).headers.get('x-charged-minor')).toBe('0');
    await (right as Response).text();
    expect(await h.upstreamCount()).toBe(upstreamBefore + 2);
    const charges = (await h.ledger()).entries.filter((e) => e.inn === inn);
    expect(charges).toHaveLength(1);

    // Once the write lands, the next read is a HIT.
    release();
    await expect
      .poll(async () => (await h.call('beta', `/v1/companies/${inn}`)).headers.get('x-cache'))
      .toBe('HIT');
    expect(await h.upstreamCount()).toBe(upstreamBefore + 2);
  });
});
