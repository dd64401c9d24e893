// The bus role's part of the Store contract (see store-contract.ts): declared against the
// harness the caller's beforeEach provides, run over every backend.
import { describe, expect, it } from 'vitest';
import { type ContractContext, settle, until } from './contract-harness.ts';

export function describeBusContract(t: ContractContext): void {
  describe('pub/sub', () => {
    it('delivers to every subscriber, asynchronously, until unsubscribed', async () => {
      const a: string[] = [];
      const b: string[] = [];
      const offA = await t.store.subscribe('done:req1', (m) => a.push(m));
      const offB = await t.store.subscribe('done:req1', (m) => b.push(m));
      const published = t.store.publish('done:req1', 'hello');
      expect(a).toEqual([]); // never inside publish()
      await published;
      await until(() => a.length === 1 && b.length === 1);
      expect(a).toEqual(['hello']);
      await offA();
      await t.store.publish('done:req1', 'second');
      await until(() => b.length === 2);
      expect(b).toEqual(['hello', 'second']);
      expect(a).toEqual(['hello']);
      await offB();
      await t.store.publish('done:req1', 'third');
      await settle(50);
      expect(b).toHaveLength(2);
    });

    it('does not deliver other channels', async () => {
      const got: string[] = [];
      const off = await t.store.subscribe('ch:a', (m) => got.push(m));
      await t.store.publish('ch:b', 'x');
      await t.store.publish('ch:a', 'y');
      await until(() => got.length === 1);
      await settle(30);
      expect(got).toEqual(['y']);
      await off();
    });
  });
}
