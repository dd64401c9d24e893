// The cache role's part of the Store contract (see store-contract.ts): declared against the
// harness the caller's beforeEach provides, run over every backend.
import { describe, expect, it } from 'vitest';
import { type ContractContext, SLACK_MS, TTL } from './contract-harness.ts';

export function describeCacheContract(t: ContractContext): void {
  describe('cache', () => {
    it('stores and returns buffers; a missing key is null', async () => {
      const body = Buffer.from([0, 1, 2, 255, 254]);
      await t.store.cacheSet('dossier:7707083893', body, { ttlMs: 60_000 });
      expect(await t.store.cacheGet('dossier:7707083893')).toEqual(body);
      expect(await t.store.cacheGet('dossier:0000000000')).toBeNull();
    });

    it('reads several entries at once, in the order asked, across companies and untagged keys', async () => {
      await t.store.cacheSet('section:7707083893:founders:-', Buffer.from('f'), { ttlMs: TTL });
      await t.store.cacheSet('section:7707083893:branches:-', Buffer.from([0, 255]), { ttlMs: TTL });
      await t.store.cacheSet('company:7736050003', Buffer.from('o'), { ttlMs: TTL });
      await t.store.cacheSet('suggest:q=abc', Buffer.from('s'), { ttlMs: TTL });
      const got = await t.store.cacheGetMany([
        'section:7707083893:branches:-',
        'section:7707083893:taxes:-',
        'company:7736050003',
        'suggest:q=abc',
        'section:7707083893:founders:-',
        'suggest:q=none',
      ]);
      expect(got.map((b) => (b === null ? null : [...b]))).toEqual([
        [0, 255],
        null,
        [...Buffer.from('o')],
        [...Buffer.from('s')],
        [...Buffer.from('f')],
        null,
      ]);
      expect(await t.store.cacheGetMany([])).toEqual([]);
      await t.h.pass(TTL + SLACK_MS);
      expect(await t.store.cacheGetMany(['suggest:q=abc', 'section:7707083893:founders:-'])).toEqual([
        null,
        null,
      ]);
    });

    it('expires entries after their TTL', async () => {
      await t.store.cacheSet('search:q=abc', Buffer.from('x'), { ttlMs: TTL });
      await t.h.pass(TTL / 4);
      expect(await t.store.cacheGet('search:q=abc')).not.toBeNull();
      await t.h.pass(TTL + SLACK_MS);
      expect(await t.store.cacheGet('search:q=abc')).toBeNull();
    });

    it('deletes one entry', async () => {
      await t.store.cacheSet('a', Buffer.from('1'), { ttlMs: 60_000 });
      await t.store.cacheDelete('a');
      await t.store.cacheDelete('never-set');
      expect(await t.store.cacheGet('a')).toBeNull();
    });

    it('purges every entry carrying a tag and counts them', async () => {
      const opts = (tags: string[]) => ({ ttlMs: 60_000, tags });
      await t.store.cacheSet('dossier:7707083893', Buffer.from('d'), opts(['inn:7707083893']));
      await t.store.cacheSet('requisites:7707083893', Buffer.from('r'), opts(['inn:7707083893', 'kind:req']));
      await t.store.cacheSet('dossier:7736050003', Buffer.from('o'), opts(['inn:7736050003']));
      expect(await t.store.cachePurgeTag('inn:7707083893')).toBe(2);
      expect(await t.store.cacheGet('dossier:7707083893')).toBeNull();
      expect(await t.store.cacheGet('requisites:7707083893')).toBeNull();
      expect(await t.store.cacheGet('dossier:7736050003')).not.toBeNull();
      expect(await t.store.cachePurgeTag('inn:7707083893')).toBe(0);
      expect(await t.store.cachePurgeTag('kind:req')).toBe(0);
      expect(await t.store.cachePurgeTag('no-such-tag')).toBe(0);
    });

    it('replaces an entry only when it starts with the expected bytes, keeping its TTL and tags', async () => {
      const old = Buffer.from('HEAD1-identity-body');
      await t.store.cacheSet('company:7707083893', old, { ttlMs: TTL, tags: ['inn:7707083893'] });
      expect(await t.store.cacheReplace('company:7707083893', Buffer.from('HEAD2'), Buffer.from('x'))).toBe(
        false,
      );
      expect(await t.store.cacheGet('company:7707083893')).toEqual(old);
      const packed = Buffer.from('HEAD1-packed');
      expect(await t.store.cacheReplace('company:7707083893', Buffer.from('HEAD1'), packed)).toBe(true);
      expect(await t.store.cacheGet('company:7707083893')).toEqual(packed);
      expect(await t.store.cacheReplace('never-set', Buffer.from('HEAD1'), packed)).toBe(false);
      expect(await t.store.cacheGet('never-set')).toBeNull();
      // The tag still reaches it, and it still expires when the first set said.
      await t.store.cacheSet('company:7736050003', old, { ttlMs: TTL, tags: ['inn:7736050003'] });
      await t.store.cacheReplace('company:7736050003', Buffer.from('HEAD1'), packed);
      expect(await t.store.cachePurgeTag('inn:7736050003')).toBe(1);
      expect(await t.store.cacheGet('company:7736050003')).toBeNull();
      await t.h.pass(TTL + SLACK_MS);
      expect(await t.store.cacheGet('company:7707083893')).toBeNull();
    });

    it('counts a replaced entry at its new size', async () => {
      await t.store.cacheSet('k', Buffer.alloc(100, 1), { ttlMs: 60_000 });
      expect(await t.store.cacheBytes()).toBe(101);
      expect(await t.store.cacheReplace('k', Buffer.alloc(4, 1), Buffer.alloc(10, 1))).toBe(true);
      expect(await t.store.cacheBytes()).toBe(11);
    });

    it('does not count already-expired entries in a purge', async () => {
      await t.store.cacheSet('short', Buffer.from('s'), { ttlMs: TTL, tags: ['t'] });
      await t.store.cacheSet('long', Buffer.from('l'), { ttlMs: 60_000, tags: ['t'] });
      await t.h.pass(TTL + SLACK_MS);
      expect(await t.store.cachePurgeTag('t')).toBe(1);
    });

    it('tracks bytes (body + key) through set, overwrite, delete, purge and expiry', async () => {
      const base = await t.store.cacheBytes();
      expect(base).toBe(0);
      await t.store.cacheSet('k1', Buffer.alloc(100), { ttlMs: 60_000, tags: ['g'] });
      await t.store.cacheSet('k2', Buffer.alloc(50), { ttlMs: TTL });
      expect(await t.store.cacheBytes()).toBe(102 + 52);
      await t.store.cacheSet('k1', Buffer.alloc(10), { ttlMs: 60_000, tags: ['g'] });
      expect(await t.store.cacheBytes()).toBe(12 + 52);
      await t.store.cacheDelete('k2');
      expect(await t.store.cacheBytes()).toBe(12);
      await t.store.cachePurgeTag('g');
      expect(await t.store.cacheBytes()).toBe(0);
      await t.store.cacheSet('k3', Buffer.alloc(30), { ttlMs: TTL });
      expect(await t.store.cacheBytes()).toBe(32);
      await t.h.pass(TTL + SLACK_MS);
      expect(await t.store.cacheBytes()).toBe(0);
    });

    it('keeps cache and state apart even under the same logical key', async () => {
      await t.store.cacheSet('same', Buffer.from('cache'), { ttlMs: 60_000 });
      await t.store.set('same', 'state', 60_000);
      expect((await t.store.cacheGet('same'))?.toString()).toBe('cache');
      expect(await t.store.get('same')).toBe('state');
    });
  });
}
