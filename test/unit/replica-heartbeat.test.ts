// The replica heartbeat (src/ops/replica-heartbeat.ts) on a memory store with an injected clock:
// the config hash is stable (key order does not matter), leaves secrets out (token hashes, URL
// passwords) and changes with a setting; a heartbeat lives 30 s unless renewed; a stopped
// replica leaves the list at once; a store fault is reported once per streak and never thrown.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import {
  configHash,
  GATEWAY_VERSION,
  HEARTBEAT_TTL_MS,
  ReplicaHeartbeat,
  redactedConfig,
} from '../../src/ops/replica-heartbeat.ts';
import { MemoryStore } from '../../src/store/index.ts';

const TOKEN_HASH = `sha256:${'ab'.repeat(32)}`;
const config = {
  store: { redisUrl: 'redis://default:hunter2@redis:6379/0', prefix: 'cpgw' },
  admin: { tokenHash: TOKEN_HASH, tokens: [{ name: 'fin', role: 'finance', tokenHash: TOKEN_HASH }] },
  apps: [{ name: 'crm', tokenHash: TOKEN_HASH, budgets: { day: { limitMinor: 1000 } } }],
};

describe('configHash', () => {
  it('is stable across key order and leaves secrets out', () => {
    const reordered = {
      apps: [{ budgets: { day: { limitMinor: 1000 } }, tokenHash: TOKEN_HASH, name: 'crm' }],
      admin: { tokens: [], tokenHash: null },
      store: { prefix: 'cpgw', redisUrl: 'redis://other-user:other-pass@redis:6379/0' },
    };
    expect(configHash(reordered)).toBe(configHash(config));
    const shown = JSON.stringify(redactedConfig(config));
    expect(shown).not.toContain('hunter2');
    expect(shown).not.toContain('sha256:');
    expect(shown).toContain('redis://redis:6379/0');
    expect(configHash(config)).toMatch(/^[0-9a-f]{16}$/);
  });

  it('changes with a setting', () => {
    const raised = { ...config, apps: [{ ...config.apps[0]!, budgets: { day: { limitMinor: 2000 } } }] };
    expect(configHash(raised)).not.toBe(configHash(config));
  });
});

describe('ReplicaHeartbeat', () => {
  it('lists live replicas, lapses after the TTL unless renewed, and leaves the list on stop', async () => {
    const clock = new ManualClock();
    const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
    const a = new ReplicaHeartbeat({ store, clock, config, id: 'a' });
    const b = new ReplicaHeartbeat({ store, clock, config, id: 'b' });
    await a.start();
    clock.advance(1000);
    await b.start();
    let list = await a.list();
    expect(list.map((r) => r.id)).toEqual(['a', 'b']);
    expect(list[0]).toMatchObject({ version: GATEWAY_VERSION, config_hash: a.hash });
    expect(JSON.stringify(list)).not.toContain('sha256:');

    // b stops beating (its timer is real time; this clock moves by hand): gone after the TTL.
    clock.advance(HEARTBEAT_TTL_MS - 5000);
    await a.beat();
    clock.advance(5000);
    list = await b.list();
    expect(list.map((r) => r.id)).toEqual(['a']);
    expect(Date.parse(list[0]!.last_seen_at)).toBe(clock.now() - 5000);

    await b.beat();
    await b.setConfig({ ...config, apps: [] });
    list = await a.list();
    expect(new Set(list.map((r) => r.config_hash)).size).toBe(2);

    await a.stop();
    await b.stop();
    clock.advance(2);
    expect(await a.list()).toEqual([]);
  });

  it('reports a store fault once per streak and never throws', async () => {
    const clock = new ManualClock();
    let fail = true;
    const errors: unknown[] = [];
    let recovered = 0;
    const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
    const flaky = {
      get: (k: string) => store.get(k),
      keys: (p: string) => store.keys(p),
      set: (k: string, v: string, ttl: number) =>
        fail ? Promise.reject(new Error('down')) : store.set(k, v, ttl),
    };
    const hb = new ReplicaHeartbeat({
      store: flaky,
      clock,
      config,
      onError: (e) => errors.push(e),
      onRecovered: () => recovered++,
    });
    await hb.start();
    await hb.beat();
    expect(errors).toHaveLength(1);
    fail = false;
    await hb.beat();
    expect(recovered).toBe(1);
    expect((await hb.list()).map((r) => r.id)).toEqual([hb.id]);
    await hb.stop();
  });
});
