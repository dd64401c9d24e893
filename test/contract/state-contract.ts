// The state role's part of the Store contract (see store-contract.ts): declared against the
// harness the caller's beforeEach provides, run over every backend.
import { describe, expect, it } from 'vitest';
import { type ContractContext, SLACK_MS, TTL } from './contract-harness.ts';

export function describeStateContract(t: ContractContext): void {
  describe('state', () => {
    it('sets, overwrites and reads', async () => {
      expect(await t.store.get('window:7707083893')).toBeNull();
      await t.store.set('window:7707083893', 'v1', 60_000);
      await t.store.set('window:7707083893', 'v2', 60_000);
      expect(await t.store.get('window:7707083893')).toBe('v2');
    });

    it('expires keys after their TTL', async () => {
      await t.store.set('ticket:abc', 'x', TTL);
      await t.h.pass(TTL / 4);
      expect(await t.store.get('ticket:abc')).toBe('x');
      await t.h.pass(TTL + SLACK_MS);
      expect(await t.store.get('ticket:abc')).toBeNull();
    });

    it('setIfAbsent: exactly one of 20 concurrent callers wins', async () => {
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => t.store.setIfAbsent('event:evt_1', `r${i}`, 60_000)),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(await t.store.get('event:evt_1')).toBe(`r${results.indexOf(true)}`);
    });

    it('setIfAbsent succeeds again once the key expired', async () => {
      expect(await t.store.setIfAbsent('dedup:1', 'a', TTL)).toBe(true);
      expect(await t.store.setIfAbsent('dedup:1', 'b', TTL)).toBe(false);
      await t.h.pass(TTL + SLACK_MS);
      expect(await t.store.setIfAbsent('dedup:1', 'c', TTL)).toBe(true);
      expect(await t.store.get('dedup:1')).toBe('c');
    });

    it('lists keys by logical prefix, bounded by limit, without expired ones', async () => {
      await t.store.set('window:7707083893', '1', 60_000);
      await t.store.set('window:7736050003', '1', 60_000);
      await t.store.set('window:other', '1', 60_000);
      await t.store.set('windowless', '1', 60_000);
      await t.store.set('lock:window:7707083893', '1', 60_000);
      await t.store.set('window:1234567890', '1', TTL);
      await t.h.pass(TTL + SLACK_MS);
      expect((await t.store.keys('window:')).sort()).toEqual([
        'window:7707083893',
        'window:7736050003',
        'window:other',
      ]);
      expect(await t.store.keys('window:', 2)).toHaveLength(2);
      expect(await t.store.keys('nothing:')).toEqual([]);
    });

    it('lists the keys the gateway lists every second (checks, webhooks) the same way', async () => {
      await t.store.set('webhook:out:chk_1:crm', '{}', 60_000);
      expect(await t.store.setIfAbsent('webhook:out:chk_2:crm', '{}', 60_000)).toBe(true);
      await t.store.set('webhook:out:chk_3:crm', '{}', TTL);
      await t.store.set('webhook:outbox', '1', 60_000);
      await t.store.set('check-pending:7707083893:contract', 'chk_1', 60_000);
      await t.h.pass(TTL + SLACK_MS);
      expect((await t.store.keys('webhook:out:')).sort()).toEqual([
        'webhook:out:chk_1:crm',
        'webhook:out:chk_2:crm',
      ]);
      expect(await t.store.keys('webhook:out:chk_2')).toEqual(['webhook:out:chk_2:crm']);
      expect(await t.store.keys('webhook:out:', 1)).toHaveLength(1);
      expect(await t.store.keys('check-pending:')).toEqual(['check-pending:7707083893:contract']);
      // Set again with a short TTL (a check seen ready): no longer listed once that passed.
      await t.store.set('check-pending:7707083893:contract', '', TTL);
      await t.h.pass(TTL + SLACK_MS);
      expect(await t.store.keys('check-pending:')).toEqual([]);
    });
  });
  describe('locks', () => {
    it('only the owner releases; then another can acquire', async () => {
      expect(await t.store.acquireLock('charge:7707083893', 'a', 60_000)).toBe(true);
      expect(await t.store.acquireLock('charge:7707083893', 'b', 60_000)).toBe(false);
      expect(await t.store.releaseLock('charge:7707083893', 'b')).toBe(false);
      expect(await t.store.releaseLock('charge:7707083893', 'a')).toBe(true);
      expect(await t.store.releaseLock('charge:7707083893', 'a')).toBe(false);
      expect(await t.store.acquireLock('charge:7707083893', 'b', 60_000)).toBe(true);
    });

    it('exactly one of 20 concurrent acquirers wins', async () => {
      const won = await Promise.all(
        Array.from({ length: 20 }, (_, i) => t.store.acquireLock('l', `o${i}`, 60_000)),
      );
      expect(won.filter(Boolean)).toHaveLength(1);
    });

    it('expires, and the late owner can no longer release the new holder', async () => {
      expect(await t.store.acquireLock('l2', 'a', TTL)).toBe(true);
      await t.h.pass(TTL + SLACK_MS);
      expect(await t.store.acquireLock('l2', 'b', 60_000)).toBe(true);
      expect(await t.store.releaseLock('l2', 'a')).toBe(false);
      expect(await t.store.get('l2')).toBe('b');
    });

    it("renewLock extends only the owner's lease, and not after it expired", async () => {
      expect(await t.store.acquireLock('lease', 'a', TTL)).toBe(true);
      await t.h.pass(TTL / 2);
      expect(await t.store.renewLock('lease', 'b', 60_000)).toBe(false);
      expect(await t.store.renewLock('lease', 'a', TTL * 2)).toBe(true);
      await t.h.pass(TTL / 2 + SLACK_MS);
      expect(await t.store.get('lease')).toBe('a'); // would have expired without the renewal
      expect(await t.store.acquireLock('lease', 'b', 60_000)).toBe(false);
      await t.h.pass(TTL * 2);
      expect(await t.store.renewLock('lease', 'a', 60_000)).toBe(false);
      expect(await t.store.acquireLock('lease', 'b', 60_000)).toBe(true);
      expect(await t.store.renewLock('never-locked', 'a', 60_000)).toBe(false);
    });
  });

  describe('blobs', () => {
    it('stores binary values apart from state and cache, never counted as cache bytes', async () => {
      const body = Buffer.from([0, 255, 1, 254, 10, 13]);
      await t.store.putBlob('coalesce:answer:7707083893', body, 60_000);
      expect(await t.store.getBlob('coalesce:answer:7707083893')).toEqual(body);
      expect(await t.store.getBlob('coalesce:answer:0000000000')).toBeNull();
      expect(await t.store.cacheBytes()).toBe(0);
      expect(await t.store.cacheGet('coalesce:answer:7707083893')).toBeNull();
      expect(await t.store.get('coalesce:answer:7707083893')).toBeNull();
      expect(await t.store.keys('coalesce:')).toEqual([]);
      await t.store.putBlob('coalesce:answer:7707083893', Buffer.from('v2'), 60_000);
      expect((await t.store.getBlob('coalesce:answer:7707083893'))?.toString()).toBe('v2');
    });

    it('expires blobs after their TTL', async () => {
      await t.store.putBlob('b', Buffer.from('x'), TTL);
      await t.h.pass(TTL / 4);
      expect(await t.store.getBlob('b')).not.toBeNull();
      await t.h.pass(TTL + SLACK_MS);
      expect(await t.store.getBlob('b')).toBeNull();
    });
  });
}
