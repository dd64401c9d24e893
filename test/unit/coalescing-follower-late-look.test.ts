// A follower on another replica whose look for the leader's parked answer comes just before the
// answer is parked, and whose next try for the lock just after the leader released it, still
// takes that answer: one upstream call, not two. Load made this interleaving (the
// coalescing-replicas flake, docs/performance.md); here the follower's store makes it happen.
import { expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { Coalescer, type SharedAnswer } from '../../src/cost/coalescer.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import type { StateStore } from '../../src/store/store.ts';

it('a follower that looked just before the leader parked its answer takes it after the release: one call', async () => {
  const clock = new ManualClock();
  const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
  const replicaA = new Coalescer({ store, clock, distributed: true, pollMs: 20 });
  let calls = 0;
  let finish!: (a: SharedAnswer) => void;
  const call = () => {
    calls++;
    if (calls > 1) return Promise.resolve({ status: 200, headers: {}, body: Buffer.from('second call') });
    return new Promise<SharedAnswer>((r) => {
      finish = r;
    });
  };
  const park = (a: SharedAnswer) => a;
  const onDemand = { parkOnDemand: true };
  const leader = replicaA.run('k', clock.now() + 60_000, call, park, onDemand);
  await new Promise((r) => setImmediate(r));

  // Replica B's first look finds nothing; before its answer comes back, the leader answers,
  // parks its answer (B said it waits) and releases the lock.
  let looked = false;
  const lateLook = async (key: string): Promise<Buffer | null> => {
    const found = await store.getBlob(key);
    if (!looked && found === null) {
      looked = true;
      finish({ status: 200, headers: {}, body: Buffer.from('dossier') });
      await leader;
      await replicaA.idle();
      expect(await store.get('coalesce:lock:k')).toBeNull();
    }
    return found;
  };
  const storeB = new Proxy(store, {
    get(target, prop) {
      if (prop === 'getBlob') return lateLook;
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as StateStore;
  const replicaB = new Coalescer({ store: storeB, clock, distributed: true, pollMs: 20 });
  const follower = replicaB.run('k', clock.now() + 60_000, call, park, onDemand);

  const done = Promise.all([leader, follower]);
  let settled = false;
  done.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let i = 0; i < 1_000 && !settled; i++) {
    await new Promise((r) => setImmediate(r));
    if (clock.pendingSleeps > 0) clock.advance(20);
  }
  const [a, b] = await done;
  await replicaB.idle();
  expect(looked).toBe(true);
  expect(calls).toBe(1);
  expect(a.follower).toBe(false);
  expect(b.follower).toBe(true);
  expect(b.answer.body.toString()).toBe('dossier');
  // The lock the follower took to be sure is given back.
  expect(await store.get('coalesce:lock:k')).toBeNull();
});
