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
